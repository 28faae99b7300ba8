import { resolveOnWatchError, type WatchErrorHandler } from '../../core/watch-hub.js';
import { invalidArgument } from '../../core/errors.js';
import { checkInteger, checkKnownKeys, describe, optionKeys } from '../../core/options.js';

/** The key namespace, timeouts and batch limits of an `EtcdStore`. */
export interface EtcdStoreOptions {
  /**
   * Start of every key: one namespace of leases. Any UTF-8 without NUL, 1 to 128 bytes; end it
   * with a separator (`/`), since a namespace whose prefix extends another's would see its keys.
   * @default '/leasehold/'
   */
  prefix?: string;
  /**
   * Deadline of every etcd call, in ms, after which it fails with `STORE_UNAVAILABLE` (a paused or
   * unreachable server never makes a call hang). A write that timed out may still land later.
   * @default 5000
   */
  timeoutMs?: number;
  /**
   * The server's `--max-txn-ops` (128 by default): etcd refuses a transaction with more
   * operations, so batches are split to fit (126 acquires or releases, 125 renewals per
   * transaction at 128) and the parts sent concurrently; single-lease transitions sent together
   * keep to it as well. At least 4.
   * @default 128
   */
  maxTxnOps?: number;
  /**
   * Called when the stream that serves `watch` fails; it reconnects and resumes by itself.
   * @default emits a process warning
   */
  onWatchError?: WatchErrorHandler;
}

export const ETCD_DEFAULTS = Object.freeze({
  prefix: '/leasehold/',
  timeoutMs: 5000,
  maxTxnOps: 128,
});

const ETCD_KEYS = optionKeys<EtcdStoreOptions>({
  prefix: true,
  timeoutMs: true,
  maxTxnOps: true,
  onWatchError: true,
});

export interface ResolvedEtcdOptions {
  readonly prefix: string;
  readonly timeoutMs: number;
  readonly maxTxnOps: number;
  readonly onWatchError: WatchErrorHandler;
}

export function resolveEtcdOptions(options: EtcdStoreOptions = {}): ResolvedEtcdOptions {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('options', `must be an object, got ${describe(options)}`);
  checkKnownKeys('EtcdStore options', options, ETCD_KEYS);
  const onWatchError = resolveOnWatchError(options.onWatchError);
  return {
    prefix: checkPrefix(options.prefix ?? ETCD_DEFAULTS.prefix),
    timeoutMs: checkInteger('timeoutMs', options.timeoutMs ?? ETCD_DEFAULTS.timeoutMs, 1, 600_000),
    maxTxnOps: checkCount('maxTxnOps', options.maxTxnOps ?? ETCD_DEFAULTS.maxTxnOps, 4),
    onWatchError,
  };
}

function checkPrefix(value: unknown): string {
  const ok =
    typeof value === 'string' &&
    value.length > 0 &&
    value.isWellFormed() &&
    !value.includes('\u0000') &&
    Buffer.byteLength(value, 'utf8') <= 128;
  if (!ok) {
    throw invalidArgument(
      'prefix',
      `must be 1 to 128 bytes of UTF-8 without NUL, got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

function checkCount(field: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > 100_000)
    throw invalidArgument(field, `must be an integer from ${min} to 100000, got ${String(value)}`);
  return value;
}
