import { ErrorCode, LeaseError } from './errors.js';
import type { LeaseStore } from './store.js';

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

export interface OpenStoreOptions {
  /**
   * Create the store's tables when they are missing, for stores that do not create them on first
   * use (DynamoDB); what `leasehold init` asks for. @default false
   */
  create?: boolean;
}

type Opener = (url: StoreUrl, options: OpenStoreOptions) => Promise<LeaseStore & AsyncDisposable>;

const openers = new Map<string, Opener>([
  ['memory', async (url) => (await import('../stores/memory/open.js')).openMemory(url)],
  ['sqlite', async (url) => (await import('../stores/sqlite/open.js')).openSqlite(url)],
  ['postgres', async (url) => (await import('../stores/postgres/open.js')).openPostgres(url)],
  ['postgresql', async (url) => (await import('../stores/postgres/open.js')).openPostgres(url)],
  ['mysql', async (url) => (await import('../stores/mysql/open.js')).openMysql(url)],
  ['mariadb', async (url) => (await import('../stores/mysql/open.js')).openMysql(url)],
  ['redis', async (url) => (await import('../stores/redis/open.js')).openRedis(url)],
  ['rediss', async (url) => (await import('../stores/redis/open.js')).openRedis(url)],
  [
    'dynamodb',
    async (url, options) => (await import('../stores/dynamodb/open.js')).openDynamodb(url, options),
  ],
  ['etcd', async (url) => (await import('../stores/etcd/open.js')).openEtcd(url)],
]);

/** Schemes `openStore` understands, for messages and the CLI's help. */
export function knownSchemes(): string[] {
  return [...openers.keys()];
}

/**
 * Opens the store a URL names. With no URL: `LEASEHOLD_STORE` from the environment,
 * else the embedded SQLite file `./leasehold.db`. Every store it opens can be closed with
 * `await using`.
 */
export async function openStore(
  url?: string,
  options: OpenStoreOptions = {},
): Promise<LeaseStore & AsyncDisposable> {
  const text = url ?? process.env.LEASEHOLD_STORE ?? DEFAULT_STORE_URL;
  const parsed = parseStoreUrl(text);
  const opener = openers.get(parsed.scheme);
  if (!opener) {
    throw new LeaseError(
      ErrorCode.STORE_URL_INVALID,
      `unknown store scheme "${parsed.scheme}:" in ${parsed.redacted}; known: ${knownSchemes()
        .map((s) => `${s}:`)
        .join(', ')}`,
    );
  }
  return opener(parsed, options);
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
 * Replaces the password of `scheme://user:password@host…` with `***`. The user info runs to the
 * last `@` before the query, so a password with an unencoded `@` or `/` is still hidden whole.
 */
export function redact(text: string): string {
  const q = text.indexOf('?');
  if (q !== -1) return redactMain(text.slice(0, q)) + redactNested(text.slice(q));
  return redactMain(text);
}

/** Credentials of URLs nested in query parameters, such as `?endpoint=http://user:pass@host`. */
function redactNested(query: string): string {
  return query.replace(/((?:\/\/|%2F%2F)[^/@:?&#=\s]*(?::|%3A))[^@&#\s]*(@|%40)/gi, '$1***$2');
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

/** Reads the query parameters a store accepts, rejecting any other so typos are not ignored. */
export function takeParams(url: StoreUrl, allowed: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of url.params) {
    if (!allowed.includes(key)) {
      throw new LeaseError(
        ErrorCode.STORE_URL_INVALID,
        `unknown parameter "${key}" in ${url.redacted}; ${url.scheme}: accepts ${allowed.join(', ') || 'none'}`,
      );
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
    throw new LeaseError(
      ErrorCode.STORE_URL_INVALID,
      `parameter ${key}=${JSON.stringify(value)} in ${url.redacted} must be a whole number`,
    );
  }
  return Number(value);
}
