import { checkData, type LeaseData } from '../core/lease-data.js';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { invalidArgument } from '../core/errors.js';
import {
  checkBoolean,
  checkInteger,
  checkKnownKeys,
  checkOwner,
  checkPermits,
  checkTtl,
  describe,
  LIMITS,
  optionKeys,
} from '../core/options.js';
import type { LeaseStore } from '../core/store.js';
import { driftMs, systemClock, type Clock } from '../core/time.js';
import { checkLogger, type LeaseholdLogger } from '../core/logger.js';
import { checkIgnore } from '../core/doctor.js';

/** How a `LeaseClient` acquires and keeps its leases. */
export interface LeaseClientOptions {
  /** Where the lease records live (see `openStore`). */
  store: LeaseStore;
  /** Who this client is in lease records; must be unique among live holders. @default `<hostname>:<pid>:<random>` */
  owner?: string;
  /** How long an acquire or renew keeps the lease without another renew, in ms. @default 20000 */
  ttlMs?: number;
  /** How often held leases are renewed, in ms; at most `ttlMs / 3`. @default ttlMs / 4 */
  heartbeatMs?: number;
  /** Clock disagreement to allow, in ms: the holder stops believing this much earlier (design rule 2). @default store.maxClockSkewMs */
  maxClockSkewMs?: number;
  /** Renew held leases on a timer; `false` when the caller drives `HeldLease.renew()` itself. @default true */
  autoRenew?: boolean;
  /** Where time comes from; inject a `ManualClock` in tests. @default the system clock */
  clock?: Clock;
  /**
   * Where to log what happens to the leases (pino-style `(fields, message)`; a pino logger or
   * `console` fits): lost, at-risk and store errors at `warn`, acquired and released at `debug`.
   * @default none (silent)
   */
  logger?: LeaseholdLogger;
  /**
   * Finding ids of `leasehold doctor` known and accepted for this store, left out of the one-time
   * report of its setup (to `logger` and the `leasehold:store:finding` channel); an id no store
   * reports is refused. `LEASEHOLD_IGNORE_FINDINGS` (comma-separated) adds to it. @default []
   */
  ignoreFindings?: readonly string[];
}

export interface ResolvedClientOptions {
  readonly store: LeaseStore;
  readonly owner: string;
  readonly ttlMs: number;
  readonly heartbeatMs: number;
  readonly maxClockSkewMs: number;
  readonly autoRenew: boolean;
  readonly clock: Clock;
  readonly logger: LeaseholdLogger | undefined;
  readonly ignoreFindings: ReadonlySet<string>;
}

export const CLIENT_DEFAULTS = Object.freeze({
  ttlMs: 20_000,
  heartbeatFraction: 4,
  autoRenew: true,
});

const CLIENT_KEYS = optionKeys<LeaseClientOptions>({
  store: true,
  owner: true,
  ttlMs: true,
  heartbeatMs: true,
  maxClockSkewMs: true,
  autoRenew: true,
  clock: true,
  logger: true,
  ignoreFindings: true,
});

const STORE_METHODS = [
  'tryAcquire',
  'renew',
  'release',
  'renewMany',
  'releaseMany',
  'get',
  'list',
  'close',
] as const;

export function resolveClientOptions(options: LeaseClientOptions): ResolvedClientOptions {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('options', `must be an object, got ${describe(options)}`);
  checkKnownKeys('LeaseClient options', options, CLIENT_KEYS);
  const { store } = options;
  if (
    typeof store !== 'object' ||
    store === null ||
    STORE_METHODS.some((m) => typeof store[m] !== 'function')
  ) {
    throw invalidArgument('store', 'must be a LeaseStore (see openStore)');
  }
  const owner = checkOwner(options.owner ?? defaultOwner());
  const ttlMs = checkTtl(options.ttlMs ?? CLIENT_DEFAULTS.ttlMs);
  const maxHeartbeat = Math.floor(ttlMs / 3);
  const heartbeatMs = checkInteger(
    'heartbeatMs',
    options.heartbeatMs ?? Math.floor(ttlMs / CLIENT_DEFAULTS.heartbeatFraction),
    1,
    LIMITS.ttlMaxMs,
  );
  if (heartbeatMs > maxHeartbeat) {
    throw invalidArgument(
      'heartbeatMs',
      `must be at most ttlMs / 3 (${maxHeartbeat}) so several renewals can fail before the lease lapses, got ${heartbeatMs}`,
    );
  }
  const maxClockSkewMs = checkInteger(
    'maxClockSkewMs',
    options.maxClockSkewMs ?? store.maxClockSkewMs ?? 0,
    0,
    LIMITS.ttlMaxMs,
  );
  const window = ttlMs - driftMs(ttlMs) - maxClockSkewMs;
  // A lease may go 1.25 beats between renewals (see Heartbeat.beat); two beats of validity leave
  // room for that and one failed attempt.
  if (window < 2 * heartbeatMs) {
    throw invalidArgument(
      'maxClockSkewMs',
      `leaves a validity window of ${window} ms (ttlMs − drift − maxClockSkewMs), less than two heartbeats (${2 * heartbeatMs} ms); raise ttlMs, or lower heartbeatMs or maxClockSkewMs`,
    );
  }
  const autoRenew = checkBoolean('autoRenew', options.autoRenew ?? CLIENT_DEFAULTS.autoRenew);
  const clock = options.clock ?? systemClock;
  const logger = checkLogger(options.logger);
  const ignoreFindings = checkIgnoreFindings(options.ignoreFindings);
  return {
    store,
    owner,
    ttlMs,
    heartbeatMs,
    maxClockSkewMs,
    autoRenew,
    clock,
    logger,
    ignoreFindings,
  };
}

/** `<hostname>:<pid>:<6 random hex>`: unique per client even with several clients in one process. */
export function defaultOwner(): string {
  const host = hostname().slice(0, 200) || 'host';
  return `${host}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/** What `tryAcquire` takes besides the resource. */
export interface TryAcquireOptions {
  /**
   * Take one of this many permits of the name (a counting lease: at most `permits` holders at
   * once); `1` is the exclusive lease. Every caller of one name should ask with the same number
   * (see docs/lease-family.md on changing it). @default 1
   */
  permits?: number;
}

/** How long `acquire` (and `withLease`) wait for a lease someone else holds, and for what. */
export interface AcquireOptions extends TryAcquireOptions {
  /** Give up after this many ms with `LEASE_UNAVAILABLE`; `0` tries once. @default Infinity */
  waitMs?: number;
  /** Stops waiting; the call rejects with `signal.reason`. */
  signal?: AbortSignal;
  /**
   * Wait in line: fair waiters on a name are granted in the order they arrived, and a release
   * wakes only the head of the line. A waiter that dies leaves the line within its TTL.
   * @default false
   */
  fair?: boolean;
}

/** The options of `acquireAll` (every member or none). */
export interface AcquireAllOptions {
  /** Give up after this many ms with `LEASE_UNAVAILABLE`; `0` tries once. @default Infinity */
  waitMs?: number;
  /** Stops waiting; the call rejects with `signal.reason`. */
  signal?: AbortSignal;
}

const TRY_KEYS = optionKeys<TryAcquireOptions>({ permits: true });
const ACQUIRE_KEYS = optionKeys<AcquireOptions>({
  waitMs: true,
  signal: true,
  permits: true,
  fair: true,
});
const ALL_KEYS = optionKeys<AcquireAllOptions>({ waitMs: true, signal: true });

export interface CheckedAcquireOptions {
  waitMs: number;
  signal: AbortSignal | undefined;
  permits: number;
  fair: boolean;
}

export function checkTryAcquireOptions(options: TryAcquireOptions | undefined): number {
  if (options === undefined) return 1;
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('tryAcquire options', `must be an object, got ${describe(options)}`);
  checkKnownKeys('tryAcquire options', options, TRY_KEYS);
  return options.permits === undefined ? 1 : checkPermits(options.permits);
}

export function checkAcquireOptions(
  options: AcquireOptions | undefined,
  what = 'acquire options',
  keys: readonly string[] = ACQUIRE_KEYS,
): CheckedAcquireOptions {
  if (options === undefined)
    return { waitMs: Infinity, signal: undefined, permits: 1, fair: false };
  if (typeof options !== 'object' || options === null)
    throw invalidArgument(what, `must be an object, got ${describe(options)}`);
  checkKnownKeys(what, options, keys);
  const waitMs = options.waitMs ?? Infinity;
  if (
    typeof waitMs !== 'number' ||
    Number.isNaN(waitMs) ||
    waitMs < 0 ||
    (!Number.isInteger(waitMs) && waitMs !== Infinity)
  ) {
    throw invalidArgument(
      'waitMs',
      `must be a non-negative integer or Infinity, got ${describe(waitMs)}`,
    );
  }
  const { signal } = options;
  if (signal !== undefined && !(signal instanceof AbortSignal))
    throw invalidArgument('signal', 'must be an AbortSignal');
  const permits = options.permits === undefined ? 1 : checkPermits(options.permits);
  const fair = options.fair === undefined ? false : checkBoolean('fair', options.fair);
  return { waitMs, signal, permits, fair };
}

export function checkAcquireAllOptions(
  options: AcquireAllOptions | undefined,
): Pick<CheckedAcquireOptions, 'waitMs' | 'signal'> {
  const { waitMs, signal } = checkAcquireOptions(options, 'acquireAll options', ALL_KEYS);
  return { waitMs, signal };
}

const DATA_KEYS = ['data'] as const;

/**
 * The options of `HeldLease.renew` and `release`: the data to write (checked: a string, bytes or
 * `null`, within `LIMITS.dataMaxBytes`), or `undefined` when none is given.
 */
export function checkDataOptions(options: unknown, what: string): LeaseData | null | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null)
    throw invalidArgument(what, `must be an object, got ${describe(options)}`);
  checkKnownKeys(what, options, DATA_KEYS);
  const { data } = options as { data?: unknown };
  return data === undefined ? undefined : checkData(data, `${what}.data`);
}

/** The `ignoreFindings` option, checked as `diagnoseStore`'s `ignore` is, naming the option. */
function checkIgnoreFindings(ids: unknown): ReadonlySet<string> {
  try {
    return checkIgnore(ids);
  } catch (error) {
    throw invalidArgument('ignoreFindings', (error as Error).message.replace(/^ignore /, ''));
  }
}
