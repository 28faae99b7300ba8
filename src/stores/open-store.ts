import { resolve } from 'node:path';
import { ErrorCode, invalidArgument, LeaseError } from '../core/errors.js';
import { checkKnownKeys, describe, optionKeys } from '../core/options.js';
import type { LeaseStore } from '../core/store.js';
import type { Clock } from '../core/time.js';
import {
  DEFAULT_STORE_URL,
  parseStoreUrl,
  type StoreOpenOptions,
  type StoreUrl,
} from '../core/store-url.js';

/** How `openStore` opens the store a URL names. */
export interface OpenStoreOptions {
  /**
   * Create the store's tables when they are missing, for stores that do not create them on first
   * use (DynamoDB); what `leasehold init` asks for. @default false
   */
  create?: boolean;
  /**
   * Refuse to fall back to the SQLite file `./leasehold.db` when no URL is given and
   * `LEASEHOLD_STORE` is not set: fail with `STORE_URL_INVALID` instead. Setting
   * `LEASEHOLD_REQUIRE_STORE=1` in the environment does the same for every `openStore` call.
   * @default false
   */
  requireExplicit?: boolean;
  /**
   * Where "now" comes from, for the stores that judge expiry on the caller's clock (SQLite,
   * DynamoDB, NATS KV, S3, memory); stores with a clock of their own ignore it. For tests and for
   * `leasehold verify`, which runs workers with skewed clocks. @default the system clock
   */
  clock?: Clock;
}

const OPEN_KEYS = optionKeys<OpenStoreOptions>({
  create: true,
  requireExplicit: true,
  clock: true,
});

type Opener = (url: StoreUrl, options: StoreOpenOptions) => Promise<LeaseStore & AsyncDisposable>;

// Each store (and its driver) is loaded only when a URL names it. Every store folder's open.ts
// exports one `open<Name>(url, options)` of the same shape.
const openers = new Map<string, Opener>([
  ['memory', async (url, options) => (await import('./memory/open.js')).openMemory(url, options)],
  ['sqlite', async (url, options) => (await import('./sqlite/open.js')).openSqlite(url, options)],
  [
    'postgres',
    async (url, options) => (await import('./postgres/open.js')).openPostgres(url, options),
  ],
  [
    'postgresql',
    async (url, options) => (await import('./postgres/open.js')).openPostgres(url, options),
  ],
  ['mysql', async (url, options) => (await import('./mysql/open.js')).openMysql(url, options)],
  ['mariadb', async (url, options) => (await import('./mysql/open.js')).openMysql(url, options)],
  ['redis', async (url, options) => (await import('./redis/open.js')).openRedis(url, options)],
  ['rediss', async (url, options) => (await import('./redis/open.js')).openRedis(url, options)],
  [
    'dynamodb',
    async (url, options) => (await import('./dynamodb/open.js')).openDynamodb(url, options),
  ],
  ['etcd', async (url, options) => (await import('./etcd/open.js')).openEtcd(url, options)],
  ['nats', async (url, options) => (await import('./nats/open.js')).openNats(url, options)],
  [
    'zookeeper',
    async (url, options) => (await import('./zookeeper/open.js')).openZookeeper(url, options),
  ],
  ['s3', async (url, options) => (await import('./s3/open.js')).openS3(url, options)],
]);

/** Schemes `openStore` understands, for messages and the CLI's help. */
export function knownSchemes(): string[] {
  return [...openers.keys()];
}

/**
 * Opens the store a URL names. With no URL: `LEASEHOLD_STORE` from the environment, else the
 * embedded SQLite file `./leasehold.db`, which excludes only processes on this host: the first
 * such fallback in a process emits a `LEASEHOLD_DEFAULT_STORE` warning, and `requireExplicit` (or
 * `LEASEHOLD_REQUIRE_STORE=1`) makes it an error. Every store it opens can be closed with
 * `await using`.
 */
export async function openStore(
  url?: string,
  options: OpenStoreOptions = {},
): Promise<LeaseStore & AsyncDisposable> {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('openStore options', `must be an object, got ${describe(options)}`);
  checkKnownKeys('openStore options', options, OPEN_KEYS);
  if (options.clock !== undefined && typeof options.clock?.now !== 'function')
    throw invalidArgument('clock', 'must be a Clock (an object with a now() method)');
  const text = url ?? process.env.LEASEHOLD_STORE ?? defaultStoreUrl(options);
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

let warnedDefault = false;

/**
 * The fallback store URL, once the caller and the environment allow it (warning once per process):
 * what `openStore()` uses with no URL and no `LEASEHOLD_STORE`, for callers that resolve the URL
 * themselves (the CLI).
 */
export function defaultStoreUrl(options: OpenStoreOptions = {}): string {
  if (options.requireExplicit === true || requiredByEnvironment()) {
    const by =
      options.requireExplicit === true ? 'the requireExplicit option' : 'LEASEHOLD_REQUIRE_STORE';
    throw new LeaseError(
      ErrorCode.STORE_URL_INVALID,
      `no store URL given and LEASEHOLD_STORE is not set, and ${by} rules out the default ${DEFAULT_STORE_URL}: pass a URL or set LEASEHOLD_STORE (for example postgres://user:password@host:5432/db)`,
    );
  }
  if (!warnedDefault) {
    warnedDefault = true;
    const file = resolve(DEFAULT_STORE_URL.slice('sqlite:'.length));
    process.emitWarning(
      `no store URL given and LEASEHOLD_STORE is not set: using the SQLite file ${file}, which ` +
        'excludes only processes on this host that open that file, not processes on other ' +
        'hosts. Set LEASEHOLD_STORE to share leases across hosts; set LEASEHOLD_REQUIRE_STORE=1 ' +
        'to make a missing store an error.',
      { type: 'LeaseholdWarning', code: 'LEASEHOLD_DEFAULT_STORE' },
    );
  }
  return DEFAULT_STORE_URL;
}

/** `LEASEHOLD_REQUIRE_STORE` set to anything but '', `0` or `false`. */
function requiredByEnvironment(): boolean {
  const value = process.env.LEASEHOLD_REQUIRE_STORE?.trim().toLowerCase();
  return value !== undefined && value !== '' && value !== '0' && value !== 'false';
}
