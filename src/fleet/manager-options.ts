import { invalidArgument } from '../core/errors.js';
import {
  checkBoolean,
  checkInteger,
  checkKnownKeys,
  checkOwner,
  describe,
  LIMITS,
  optionKeys,
} from '../core/options.js';
import type { LeaseStore } from '../core/store.js';
import type { Clock } from '../core/time.js';
import type { HeldLease } from '../client/held-lease.js';
import type { LeaseError } from '../core/errors.js';
import { checkLogger, type LeaseholdLogger } from '../core/logger.js';
import { checkWeights, type ResourceWeights } from './load-book.js';

/** The resources a fleet wants owned: a fixed list, or a function read again at every reconcile. */
export type WantedResources =
  readonly string[] | (() => readonly string[] | Promise<readonly string[]>);

/** How a `LeaseManager` joins its fleet and shares the wanted resources. */
export interface LeaseManagerOptions {
  /** Where the lease records live (see `openStore`). */
  store: LeaseStore;
  /** This worker's id in lease records; unique among live workers. @default `<hostname>:<pid>:<random>` */
  owner?: string;
  /** The resources the fleet wants owned: an array, or a function called at every reconcile. */
  resources: WantedResources;
  /** Lease TTL, in ms. @default 20000 */
  ttlMs?: number;
  /** Renewal period, in ms; at most `ttlMs / 3`. @default ttlMs / 4 */
  heartbeatMs?: number;
  /** How often, in ms, the worker scans the records (jittered ±20 %, and never longer than `ttlMs − heartbeatMs`). @default 15000 */
  reconcileMs?: number;
  /** Share the resources evenly among live workers. @default true */
  balance?: boolean;
  /** The most leases this worker takes. @default Infinity */
  maxLeases?: number;
  /**
   * What each resource weighs, when resources differ in cost: a function of the name, a `Map` or
   * an object (a name left out weighs 1). Every worker of a group must give the same weights; a
   * function is asked again at every reconcile, so weights may change. With weights (or
   * capacities, or loads from `reportLoad`), the fleet balances weight per unit of capacity
   * instead of counting leases. Weights choose only what a worker tries; the store's
   * compare-and-set still decides who holds. @default every resource weighs 1
   */
  weight?: ResourceWeights;
  /** How much load this worker carries relative to the others (a worker with 2 takes twice the weight of one with 1). @default 1 */
  capacity?: number;
  /**
   * When weighing: how far above its fair load a worker carries before it hands leases over, as
   * a fraction of that load (0.1: 10 %). @default 0.1
   */
  balanceTolerance?: number;
  /** When weighing: the most leases this worker hands over at one reconcile. @default Infinity */
  maxMovesPerScan?: number;
  /** Workers that share this name balance among themselves; a fleet per name. @default 'default' */
  group?: string;
  /** Clock disagreement to allow, in ms (see `LeaseClient`). @default store.maxClockSkewMs */
  maxClockSkewMs?: number;
  /** Starts the work for a resource; `lease.signal` aborts when it is lost, handed off or the manager stops. */
  onAcquired?: (lease: HeldLease) => void | Promise<void>;
  /** Told when a lease was lost (its work has already been aborted). */
  onLost?: (lease: HeldLease, error: LeaseError) => void;
  /**
   * On start, wait until the membership has not changed for this long (in ms) before taking leases,
   * so workers started together share the resources out at once instead of the first taking all and
   * handing over. 0 skips the wait. @default min(heartbeatMs, 1000)
   */
  settleMs?: number;
  /** The most resources one `acquireMany` call asks for. @default 500 */
  batchSize?: number;
  /**
   * The most acquire batches this worker has in flight at once: bulk work never crowds out the
   * heartbeat that keeps the leases already held. @default 2
   */
  maxInFlight?: number;
  /** Where time comes from; inject a `ManualClock` in tests. @default the system clock */
  clock?: Clock;
  /**
   * Where to log (pino-style `(fields, message)`; a pino logger or `console` fits), handed to the
   * manager's `LeaseClient` too: lost leases, store errors and failed reconciles at `warn`, a
   * throwing `onAcquired` at `error`, start, stop, membership changes and takeovers at `info`,
   * acquired, released and handed-off leases at `debug`. @default none (silent)
   */
  logger?: LeaseholdLogger;
}

export const MANAGER_DEFAULTS = Object.freeze({
  reconcileMs: 15_000,
  balance: true,
  group: 'default',
  settleMaxMs: 1000,
  batchSize: 500,
  maxInFlight: 2,
  balanceTolerance: 0.1,
});

export const MANAGER_KEYS = optionKeys<LeaseManagerOptions>({
  store: true,
  owner: true,
  resources: true,
  ttlMs: true,
  heartbeatMs: true,
  reconcileMs: true,
  balance: true,
  maxLeases: true,
  weight: true,
  capacity: true,
  balanceTolerance: true,
  maxMovesPerScan: true,
  group: true,
  maxClockSkewMs: true,
  onAcquired: true,
  onLost: true,
  settleMs: true,
  batchSize: true,
  maxInFlight: true,
  clock: true,
  logger: true,
});

export function checkManagerOptions(options: LeaseManagerOptions): void {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('options', `must be an object, got ${describe(options)}`);
  checkKnownKeys('LeaseManager options', options, MANAGER_KEYS);
  const { resources, reconcileMs, balance, maxLeases, group, onAcquired, onLost, owner } = options;
  const { settleMs, batchSize, maxInFlight } = options;
  if (settleMs !== undefined) checkInteger('settleMs', settleMs, 0, LIMITS.ttlMaxMs);
  if (batchSize !== undefined) checkCount('batchSize', batchSize, 1, LIMITS.batchMaxSize);
  if (maxInFlight !== undefined) checkCount('maxInFlight', maxInFlight, 1, 64);
  if (!Array.isArray(resources) && typeof resources !== 'function') {
    throw invalidArgument(
      'resources',
      'must be an array of resource names or a function returning one',
    );
  }
  if (owner !== undefined) checkOwner(owner);
  if (reconcileMs !== undefined) checkInteger('reconcileMs', reconcileMs, 10, LIMITS.ttlMaxMs);
  if (balance !== undefined) checkBoolean('balance', balance);
  if (maxLeases !== undefined && maxLeases !== Infinity)
    checkCount('maxLeases', maxLeases, 0, 10_000_000);
  checkWeights(options.weight);
  const { capacity, balanceTolerance, maxMovesPerScan } = options;
  if (capacity !== undefined) checkReal('capacity', capacity, 0, 1e6, false);
  if (balanceTolerance !== undefined) checkReal('balanceTolerance', balanceTolerance, 0, 1, true);
  if (maxMovesPerScan !== undefined && maxMovesPerScan !== Infinity)
    checkCount('maxMovesPerScan', maxMovesPerScan, 1, 10_000_000);
  if (group !== undefined && (typeof group !== 'string' || !/^[A-Za-z0-9._-]{1,64}$/.test(group))) {
    throw invalidArgument('group', 'must be 1 to 64 letters, digits, ".", "_" or "-"');
  }
  if (onAcquired !== undefined && typeof onAcquired !== 'function')
    throw invalidArgument('onAcquired', 'must be a function');
  if (onLost !== undefined && typeof onLost !== 'function')
    throw invalidArgument('onLost', 'must be a function');
  checkLogger(options.logger);
}

function checkCount(field: string, value: unknown, min: number, max: number): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
    throw invalidArgument(
      field,
      `must be an integer from ${min} to ${max}, got ${describe(value)}`,
    );
}

/** A finite number above `min` (or from it, when `minIncluded`) up to `max`. */
function checkReal(
  field: string,
  value: unknown,
  min: number,
  max: number,
  minIncluded: boolean,
): void {
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    (minIncluded ? value < min : value <= min) ||
    value > max
  )
    throw invalidArgument(
      field,
      `must be a number ${minIncluded ? 'from' : 'above'} ${min} up to ${max}, got ${describe(value)}`,
    );
}

/**
 * How a `BucketManager` sets up its `LeaseManager`: its own membership and bucket count, under a
 * symbol key of the options (not an option a user can give: `checkKnownKeys` passes symbols).
 */
export const FLEET_LAYOUT: unique symbol = Symbol('leasehold.fleetLayout');

/** See `FLEET_LAYOUT`. */
export interface FleetLayout {
  readonly membersPrefix: string;
  readonly buckets: number;
}

/** The events a `LeaseManager` emits, with their listener arguments; listener errors are isolated. */
export interface LeaseManagerEvents {
  /** A wanted resource's lease was taken, just before `onAcquired` runs. */
  acquired: [lease: HeldLease];
  /** A lease for a resource was lost (its signal aborted with `error`), just before `onLost` runs. */
  lost: [lease: HeldLease, error: LeaseError];
  /** A lease for a resource was given up (handed off, no longer wanted, or on `stop()`). */
  released: [lease: HeldLease];
  /** A lease given up so another worker can take it: `reason` is `'balance'` or `'unwanted'`. */
  handoff: [lease: HeldLease, reason: 'balance' | 'unwanted'];
  /** `onAcquired` threw or rejected; the lease is handed back so a worker can try again. */
  'work-failed': [lease: HeldLease, error: unknown];
  /** A reconcile pass failed (the store was unreachable, say); the next one is scheduled sooner. */
  'reconcile-failed': [error: unknown];
  /** This worker's view of the live members changed: who they are, and its own share now. */
  members: [members: readonly string[], share: number];
}
