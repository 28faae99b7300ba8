import { ErrorCode, isLeaseError, LeaseError } from './errors.js';

/** The store used when neither a URL nor `LEASEHOLD_STORE` is given. */
export const DEFAULT_STORE_URL = 'sqlite:./leasehold.db';

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
  const q = afterScheme.indexOf('?');
  const rest = q === -1 ? afterScheme : afterScheme.slice(0, q);
  const params = new URLSearchParams(q === -1 ? '' : afterScheme.slice(q + 1));
  return { scheme, rest, params, redacted: redact(text) };
}

/**
 * Replaces the password of `scheme://user:password@host…` with `***`, and so the credentials of
 * URLs nested in parameters and the values of parameters named like a secret (`password=`,
 * `secret=`). The user info runs to the last `@` before the query, so a password with an
 * unencoded `@` or `/` is still hidden whole.
 */
export function redact(text: string): string {
  const q = text.indexOf('?');
  if (q !== -1) return redactMain(text.slice(0, q)) + redactQuery(text.slice(q));
  return redactMain(text);
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

function redactMain(text: string): string {
  const start = text.indexOf('://');
  if (start === -1) return text;
  const query = text.indexOf('?', start);
  const end = query === -1 ? text.length : query;
  const at = text.lastIndexOf('@', end - 1);
  if (at <= start) return text;
  const colon = text.indexOf(':', start + 3);
  if (colon === -1 || colon > at) return text;
  return `${text.slice(0, colon + 1)}***${text.slice(at)}`;
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
