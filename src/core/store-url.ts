import { ErrorCode, isLeaseError, LeaseError } from './errors.js';
import type { Clock } from './time.js';

/** The store used when neither a URL nor `LEASEHOLD_STORE` is given. */
export const DEFAULT_STORE_URL = 'sqlite:./leasehold.db';

/**
 * What `openStore` hands every store's `open<Name>(url, options)` besides the URL; a store takes
 * what applies to it and ignores the rest.
 */
export interface StoreOpenOptions {
  /**
   * Create the store's table or bucket when missing, for the stores that do not create it on
   * first use (DynamoDB, S3). @default false
   */
  readonly create?: boolean;
  /**
   * Where "now" comes from, for the stores that judge expiry on the caller's clock (SQLite,
   * DynamoDB, NATS KV, S3, memory). @default the system clock
   */
  readonly clock?: Clock;
}

/** A store URL split into its parts; `params` are the query parameters. */
export interface StoreUrl {
  readonly scheme: string;
  /** Everything after `scheme:` and before `?`. */
  readonly rest: string;
  readonly params: URLSearchParams;
  /** The URL with any password replaced by `***`, safe for messages and logs. */
  readonly redacted: string;
}

export function parseStoreUrl(text: unknown): StoreUrl {
  if (typeof text !== 'string' || text.trim() === '') {
    throw new LeaseError(
      ErrorCode.STORE_URL_INVALID,
      `store URL must be a non-empty string like ${DEFAULT_STORE_URL}`,
    );
  }
  const match = /^([A-Za-z][A-Za-z0-9+.-]*):(.*)$/s.exec(text);
  if (!match) {
    throw new LeaseError(
      ErrorCode.STORE_URL_INVALID,
      `store URL "${redact(text)}" has no scheme; expected e.g. ${DEFAULT_STORE_URL}`,
    );
  }
  const scheme = match[1]!.toLowerCase();
  const afterScheme = match[2]!;
  const q = queryStart(text) - (text.length - afterScheme.length);
  const rest = q < 0 ? afterScheme : afterScheme.slice(0, q);
  const params = new URLSearchParams(q < 0 ? '' : afterScheme.slice(q + 1));
  return { scheme, rest, params, redacted: redact(text) };
}

/** Schemes whose URLs carry a path, never credentials: an `@` in them is part of a file name. */
const NO_CREDENTIALS = new Set(['memory', 'sqlite']);

/** Where the user info of a URL-like text ends (its `@`), and where its password starts. */
interface Userinfo {
  readonly password: number;
  readonly at: number;
  /** The `?` before `at` belongs to the password: the query starts after `at`. */
  readonly queryInPassword: boolean;
}

/**
 * Finds `user:password@` after the scheme (which may be misspelt, or lack its `//`) or at the start,
 * without trusting the text to be a well-formed URL: the password may hold unencoded `@`, `/`, `?`,
 * `#` or spaces. The `@` is the last one before any URL nested in a parameter; when that `@` follows
 * a `?` that starts what looks like a query (`?prefix=a@b`), the last `@` before the `?` is taken
 * instead, and with none there the whole stretch is treated as the password, so nothing leaks.
 */
function findUserinfo(text: string): Userinfo | undefined {
  const head = /^\s*(?:([A-Za-z][A-Za-z0-9+.-]*):)?(\/*)/.exec(text)!;
  if (head[1] !== undefined && NO_CREDENTIALS.has(head[1].toLowerCase())) return undefined;
  const start = head[0].length;
  const nested = text.slice(start).search(/:\/\/|%3A%2F%2F|%2F%2F/i);
  const limit = nested === -1 ? text.length : start + nested;
  let at = text.lastIndexOf('@', limit - 1);
  if (at < start) return undefined;
  const q = text.indexOf('?', start);
  let queryInPassword = false;
  if (q !== -1 && q < at) {
    const before = text.lastIndexOf('@', q);
    if (/[=&]/.test(text.slice(q, at)) && before >= start) at = before;
    else queryInPassword = !/[=&]/.test(text.slice(q, at));
  }
  const userinfo = text.slice(start, at);
  const colon = userinfo.indexOf(':');
  // An `@` inside the user info is malformed (a user name spells it `%40`): most likely a `:` typed
  // as `@` (`user@password@host`), so whatever follows the first `@` or `:` is hidden.
  const inner = userinfo.indexOf('@');
  // No scheme, or `scheme://`: the user info starts at `start` (else see below).
  const plain = head[1] === undefined || head[2] !== '';
  if (inner !== -1 && plain && (colon === -1 || inner < colon))
    return { password: start + inner + 1, at, queryInPassword };
  if (colon !== -1) return { password: start + colon + 1, at, queryInPassword };
  // `user@host` after `scheme://` names a user only; without the `//` (`user:pw@host` with no
  // scheme, or `postgres:pw@host`) the first `:` was taken for the scheme's.
  if (head[1] === undefined || head[2] !== '') return undefined;
  return {
    password: head[1].length + 1 + (head[0].length - head[0].trimStart().length),
    at,
    queryInPassword,
  };
}

/** Where the query of a store URL starts (its `?`), or -1. */
function queryStart(text: string): number {
  const userinfo = findUserinfo(text);
  const from = userinfo?.queryInPassword ? userinfo.at : 0;
  return text.indexOf('?', from);
}

/** The password of a URL-like text, as written in it, or `undefined` when it shows none. */
export function urlPassword(text: string): string | undefined {
  const userinfo = findUserinfo(text);
  const password = userinfo && text.slice(userinfo.password, userinfo.at);
  return password || undefined;
}

/**
 * Replaces the password of `scheme://user:password@host…` with `***`, and so the credentials of
 * URLs nested in parameters and the values of parameters named like a secret (`password=`,
 * `secret=`). Malformed URLs are redacted too: a misspelt scheme or one without `//`
 * (`postgres:/user:pw@host`, `user:pw@host`), and a password with unencoded `@`, `/`, `?`, `#` or
 * spaces is hidden whole; so is what follows an `@` typed for the `:` (`user@pw@host`).
 */
export function redact(text: string): string {
  const userinfo = findUserinfo(text);
  const head = userinfo ? `${text.slice(0, userinfo.password)}***` : '';
  const tail = userinfo ? text.slice(userinfo.at) : text;
  const q = tail.indexOf('?');
  return q === -1 ? head + tail : head + tail.slice(0, q) + redactQuery(tail.slice(q));
}

function redactQuery(query: string): string {
  return (
    query
      // Credentials of nested URLs, such as `?endpoint=http://user:pass@host`.
      .replace(/((?:\/\/|%2F%2F)[^/@:?&#=\s]*(?::|%3A))[^@&#\s]*(@|%40)/gi, '$1***$2')
      // Parameters whose name says they hold a secret.
      .replace(/([?&][^=&#]*(?:pass|pwd|secret)[^=&#]*=)[^&#]*/gi, '$1***')
  );
}

/**
 * `text` with the whole user part of every URL in it hidden (`//user:pass@host` becomes
 * `//***@host`), encoded or not: for endpoints a caller passed, whose user part is a credential
 * of its own (an access key id) even without a password.
 */
export function redactEndpoint(text: string): string {
  return text
    .replace(/(\/\/)[^/@?&]*@/g, '$1***@')
    .replace(/(%2F%2F)((?!%2F|&).)*?(%40)/gi, '$1***$3');
}

/**
 * The error for anything wrong in a store URL: `STORE_URL_INVALID` saying `problem`, then the URL
 * with its password hidden, then `hint`. Neither may quote the URL's credentials.
 */
export function urlError(
  url: Pick<StoreUrl, 'redacted'>,
  problem: string,
  options: { hint?: string; cause?: unknown } = {},
): LeaseError {
  const hint = options.hint === undefined ? '' : `; ${options.hint}`;
  return new LeaseError(ErrorCode.STORE_URL_INVALID, `${problem} in ${url.redacted}${hint}`, {
    cause: options.cause,
  });
}

/**
 * Reads the query parameters a store accepts. An unknown parameter (so a typo is not ignored) and
 * a repeated one (which would leave it unclear which value counts) are refused.
 */
export function takeParams(url: StoreUrl, allowed: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of url.params) {
    if (!shownInRedacted(url, key)) {
      // The parameter lies in what the redaction took for a password: naming it could leak it.
      throw urlError(url, 'a "?" that may be part of the password', {
        hint: 'percent-encode ?, #, / and @ in the user name and password (%3F, %23, %2F, %40)',
      });
    }
    if (!allowed.includes(key)) {
      throw urlError(url, `unknown parameter "${key}"`, {
        hint: `${url.scheme}: accepts ${allowed.join(', ') || 'none'}`,
      });
    }
    if (Object.hasOwn(out, key)) {
      throw urlError(url, `parameter "${key}" is given ${url.params.getAll(key).length} times`, {
        hint: 'give it once',
      });
    }
    out[key] = value;
  }
  return out;
}

/** Whether parameter `key` can be seen in the redacted URL (it is not inside a hidden password). */
function shownInRedacted(url: Pick<StoreUrl, 'redacted'>, key: string): boolean {
  const q = queryStart(url.redacted);
  if (q === -1) return false;
  const query = url.redacted.slice(q);
  return [key, encodeURIComponent(key)].some(
    (k) => query.includes(`?${k}`) || query.includes(`&${k}`),
  );
}

/** A query parameter that must be a non-negative integer. */
export function intParam(
  url: StoreUrl,
  params: Record<string, string>,
  key: string,
): number | undefined {
  const value = params[key];
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) {
    throw urlError(url, `parameter ${key}=${JSON.stringify(value)} must be a whole number`);
  }
  return Number(value);
}

/** A query parameter that must be one of `choices`. */
export function choiceParam<T extends string>(
  url: StoreUrl,
  params: Record<string, string>,
  key: string,
  choices: readonly T[],
): T | undefined {
  const value = params[key];
  if (value === undefined) return undefined;
  if (!(choices as readonly string[]).includes(value)) {
    throw urlError(
      url,
      `parameter ${key}=${JSON.stringify(value)} must be ${choices.join(' or ')}`,
    );
  }
  return value as T;
}

/** A query parameter that must be `true` or `false`. */
export function boolParam(
  url: StoreUrl,
  params: Record<string, string>,
  key: string,
): boolean | undefined {
  const value = choiceParam(url, params, key, ['true', 'false']);
  return value === undefined ? undefined : value === 'true';
}

/**
 * Runs a store's option checks on what a URL holds, before anything connects. A value they refuse
 * (`INVALID_ARGUMENT`, whose message starts with the option's name: the parameter's, or the URL
 * part's such as `table` or `database`) becomes `STORE_URL_INVALID`, like every other URL problem.
 */
export function checkUrlOptions<T>(url: Pick<StoreUrl, 'redacted'>, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (isLeaseError(error, ErrorCode.INVALID_ARGUMENT))
      throw urlError(url, error.message, { cause: error });
    throw error;
  }
}
