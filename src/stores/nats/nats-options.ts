import { resolveOnWatchError, type WatchErrorHandler } from '../../core/watch-hub.js';
import type { NatsModules } from './nats-driver.js';
import { invalidArgument } from '../../core/errors.js';
import {
  checkBoolean,
  checkConcurrency,
  checkInteger,
  checkKnownKeys,
  checkNowClock,
  describe,
  optionKeys,
} from '../../core/options.js';
import { systemClock, type Clock } from '../../core/time.js';

/** Which bucket a `NatsStore` uses, and its clock, deadline and concurrency. */
export interface NatsStoreOptions {
  /**
   * The KV bucket holding the lease records: one namespace of leases. Letters, digits, `_` and
   * `-`, 1 to 64 characters. @default 'leasehold'
   */
  bucket?: string;
  /**
   * Clock disagreement, in ms, a contender allows before treating a record as expired. NATS KV has
   * no clock a conditional write can compare with, so expiry is judged on the callers' clocks: set
   * this to twice the worst offset of any one host from true time (see docs/stores/dynamodb.md). @default 1000
   */
  maxClockSkewMs?: number;
  /**
   * Deadline of every store call, in ms (connecting included), after which it fails with a
   * retryable `STORE_UNAVAILABLE`: a paused or unreachable server never makes a call hang. A write
   * that timed out may still land later; the store resolves that by reading the record back.
   * @default 5000
   */
  timeoutMs?: number;
  /**
   * Create the bucket when it is missing (file storage, one value per key, no max age). Either
   * way the bucket is checked: one whose values expire or that lives in memory is refused
   * (`STORE_UNSAFE`), since fencing tokens would start again. @default true
   */
  createBucket?: boolean;
  /**
   * How many servers of a JetStream cluster keep a copy of the bucket when the store creates it
   * (1 to 5; an existing bucket keeps its own). With 1, the one server holding the bucket is the
   * only copy of every lease record: use 3 on a cluster of three servers or more. @default 1
   */
  replicas?: number;
  /**
   * How many per-resource transitions `acquireMany` / `renewMany` / `releaseMany` keep in flight.
   * They are pipelined on the one connection, so a wide window costs no more per write and keeps
   * the bucket's stream busy. @default 256
   */
  concurrency?: number;
  /** Where "now" comes from when writing and judging `expiresAt`. @default the system clock */
  clock?: Pick<Clock, 'now'>;
  /**
   * Called when the KV watch that serves `watch` fails; it is started again by itself.
   * @default emits a process warning
   */
  onWatchError?: WatchErrorHandler;
  /**
   * The three driver modules, imported by you, for bundled programs (a bundler cannot see the
   * store load them by name at run time): `{ transport: await import('@nats-io/transport-node'),
   * jetstream: await import('@nats-io/jetstream'), kv: await import('@nats-io/kv') }`.
   * @default the installed packages, loaded when the store opens
   */
  modules?: {
    /** `@nats-io/transport-node`. */
    readonly transport: object;
    /** `@nats-io/jetstream`. */
    readonly jetstream: object;
    /** `@nats-io/kv`. */
    readonly kv: object;
  };
}

export const NATS_DEFAULTS = Object.freeze({
  bucket: 'leasehold',
  maxClockSkewMs: 1000,
  timeoutMs: 5000,
  createBucket: true,
  replicas: 1,
  concurrency: 256,
});

export interface ResolvedNatsOptions {
  readonly bucket: string;
  readonly maxClockSkewMs: number;
  readonly timeoutMs: number;
  readonly createBucket: boolean;
  readonly replicas: number;
  readonly concurrency: number;
  readonly clock: Pick<Clock, 'now'>;
  readonly onWatchError: WatchErrorHandler;
  readonly modules: NatsModules | undefined;
}

const NATS_KEYS = optionKeys<NatsStoreOptions>({
  bucket: true,
  maxClockSkewMs: true,
  timeoutMs: true,
  createBucket: true,
  replicas: true,
  concurrency: true,
  clock: true,
  onWatchError: true,
  modules: true,
});

export function checkBucket(value: unknown): string {
  if (typeof value !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(value)) {
    throw invalidArgument(
      'bucket',
      `must be 1 to 64 letters, digits, _ or -, got ${describe(value)}`,
    );
  }
  return value;
}

export function resolveNatsOptions(options: NatsStoreOptions = {}): ResolvedNatsOptions {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('options', `must be an object, got ${describe(options)}`);
  checkKnownKeys('NatsStore options', options, NATS_KEYS);
  const createBucket = checkBoolean(
    'createBucket',
    options.createBucket ?? NATS_DEFAULTS.createBucket,
  );
  const clock = checkNowClock(options.clock ?? systemClock);
  const onWatchError = resolveOnWatchError(options.onWatchError);
  return {
    bucket: checkBucket(options.bucket ?? NATS_DEFAULTS.bucket),
    maxClockSkewMs: checkInteger(
      'maxClockSkewMs',
      options.maxClockSkewMs ?? NATS_DEFAULTS.maxClockSkewMs,
      0,
      3_600_000,
    ),
    timeoutMs: checkInteger('timeoutMs', options.timeoutMs ?? NATS_DEFAULTS.timeoutMs, 50, 600_000),
    createBucket,
    replicas: checkInteger('replicas', options.replicas ?? NATS_DEFAULTS.replicas, 1, 5),
    concurrency: checkConcurrency(options.concurrency ?? NATS_DEFAULTS.concurrency),
    clock,
    onWatchError,
    modules: checkModules(options.modules),
  };
}

/** `{ transport, jetstream, kv }`: the three @nats-io modules, each with what the store calls. */
function checkModules(value: unknown): NatsModules | undefined {
  if (value === undefined) return undefined;
  const m = value as Partial<Record<keyof NatsModules, Record<string, unknown>>> | null;
  const ok =
    typeof m === 'object' &&
    m !== null &&
    typeof m.transport?.connect === 'function' &&
    typeof m.transport.headers === 'function' &&
    typeof m.transport.createInbox === 'function' &&
    typeof m.jetstream?.jetstream === 'function' &&
    typeof m.kv?.Kvm === 'function';
  if (!ok) {
    throw invalidArgument(
      'modules',
      'must be { transport, jetstream, kv }: the @nats-io/transport-node, @nats-io/jetstream and @nats-io/kv modules',
    );
  }
  return value as NatsModules;
}
