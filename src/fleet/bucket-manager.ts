import { ErrorCode, invalidArgument, LeaseError } from '../core/errors.js';
import { checkKnownKeys, checkResource, describe } from '../core/options.js';
import type { HeldLease } from '../client/held-lease.js';
import { hashName, mix } from './assign.js';
import { LeaseManager } from './lease-manager.js';
import { FLEET_LAYOUT, MANAGER_KEYS, type LeaseManagerOptions } from './manager-options.js';
import { checkWeight } from './load-book.js';

/** The most buckets a group may have: 2^16 (a membership change costs buckets × workers hashes). */
export const MAX_BUCKETS = 65_536;

/**
 * The bucket a resource falls in, for a fleet of `buckets` buckets (a power of two): the low bits
 * of the resource name's 32-bit FNV-1a hash (over UTF-16 code units) passed through murmur3's
 * finaliser. Fixed for good: a resource never changes bucket while the count stays the same, so
 * a store column or a key prefix may keep it.
 */
export function bucketOf(resource: string, buckets: number): number {
  checkBuckets(buckets);
  return bucketIndex(resource, buckets);
}

function bucketIndex(resource: string, buckets: number): number {
  return mix(hashName(resource)) & (buckets - 1);
}

function checkBuckets(buckets: unknown): number {
  if (
    typeof buckets !== 'number' ||
    !Number.isInteger(buckets) ||
    buckets < 1 ||
    buckets > MAX_BUCKETS ||
    (buckets & (buckets - 1)) !== 0
  )
    throw invalidArgument(
      'buckets',
      `must be a power of two from 1 to ${MAX_BUCKETS}, got ${describe(buckets)}`,
    );
  return buckets;
}

/** A bucket this worker holds: its lease covers every resource that falls in it. */
export interface HeldBucket {
  /** The bucket's number, from 0 to `buckets − 1`. */
  readonly index: number;
  /**
   * The bucket's lease: its `token` is the fencing token of every resource in the bucket (it rises
   * with every new holder of the bucket), its `signal` aborts when the bucket is lost, handed off
   * or the manager stops.
   */
  readonly lease: HeldLease;
  /** Whether `resource` falls in this bucket. */
  contains(resource: string): boolean;
}

/** How a `BucketManager` joins its fleet; the rest is as for `LeaseManager`. */
export interface BucketManagerOptions extends Omit<
  LeaseManagerOptions,
  'resources' | 'weight' | 'onAcquired' | 'onLost'
> {
  /**
   * How many buckets the group's resources hash into (see `bucketOf`): a power of two up to
   * 65,536. Part of the group's identity: every worker of a group gives the same count, and a
   * worker refuses to start in a group whose live workers, or whose records, use another.
   * About 16 to 64 buckets per worker you expect leaves room to balance.
   */
  buckets: number;
  /** What each bucket weighs (the summed cost of its resources, say). @default every bucket weighs 1 */
  weight?: (bucket: number) => number;
  /**
   * Starts the work for a bucket: enumerate its resources (a column or key prefix that keeps
   * `bucketOf`, or a function of the index) and work on them until `bucket.lease.signal` aborts.
   */
  onBucket?: (bucket: HeldBucket) => void | Promise<void>;
  /** Told when a bucket's lease was lost (its work has already been aborted). */
  onLost?: (bucket: HeldBucket, error: LeaseError) => void;
}

const BUCKET_KEYS: readonly string[] = Object.freeze([
  ...MANAGER_KEYS.filter((key) => key !== 'resources' && key !== 'onAcquired'),
  'buckets',
  'onBucket',
]);

/** Where a group's bucket leases live: `leasehold/buckets/<group>/<count>/<index>`. */
function layoutPrefix(group: string, buckets: number): string {
  return `leasehold/buckets/${group}/${buckets}/`;
}

/**
 * A fleet that shares buckets instead of resources: every resource hashes into one of a fixed
 * number of buckets (`bucketOf`), the fleet balances the buckets' leases as a `LeaseManager`
 * balances resources (weights, capacity, handoff, takeover), and each worker enumerates only the
 * resources of the buckets it holds. A membership change costs `buckets × workers` hashes instead
 * of `resources × workers`, a worker's memory follows what it owns, and heartbeats renew one lease
 * per bucket, however many resources the buckets hold.
 *
 * What a user gives up for it: a resource moves only with its whole bucket, and its fencing token
 * is its bucket's (strictly increasing per resource while the count stays fixed, but shared by the
 * bucket's resources). The count is fixed for a group: to change it, start a new group (its tokens
 * begin again, so fence with the new group's tokens only).
 */
export class BucketManager extends LeaseManager {
  /** The group's bucket count. */
  readonly buckets: number;
  private readonly prefix: string;
  private readonly group: string;
  private readonly views = new WeakMap<HeldLease, HeldBucket>();

  /**
   * Checks `options` (throws `INVALID_ARGUMENT` naming the field, `buckets` included); nothing
   * runs until `start()`.
   */
  constructor(options: BucketManagerOptions) {
    if (typeof options !== 'object' || options === null)
      throw invalidArgument('options', `must be an object, got ${describe(options)}`);
    checkKnownKeys('BucketManager options', options, BUCKET_KEYS);
    const buckets = checkBuckets(options.buckets);
    const { weight, onBucket, onLost } = options;
    for (const [field, value] of [
      ['weight', weight],
      ['onBucket', onBucket],
      ['onLost', onLost],
    ] as const)
      if (value !== undefined && typeof value !== 'function')
        throw invalidArgument(field, `must be a function, got ${describe(value)}`);
    const group = options.group ?? 'default';
    const prefix = layoutPrefix(group, buckets);
    const names = Array.from({ length: buckets }, (_, i) => `${prefix}${i}`);
    const indexOf = (name: string): number => Number(name.slice(prefix.length));
    const rest: Partial<BucketManagerOptions> = { ...options };
    for (const key of ['buckets', 'weight', 'onBucket', 'onLost'] as const) delete rest[key];
    // The callbacks reach the manager, which exists only once `super` returned.
    const ref: { self?: BucketManager } = {};
    const inner = {
      ...rest,
      resources: names,
      ...(weight && {
        weight: (name: string) => checkWeight(weight(indexOf(name)), name),
      }),
      ...(onBucket && {
        onAcquired: (lease: HeldLease) => onBucket(ref.self!.bucketView(lease)),
      }),
      ...(onLost && {
        onLost: (lease: HeldLease, error: LeaseError) => onLost(ref.self!.bucketView(lease), error),
      }),
      [FLEET_LAYOUT]: { membersPrefix: `leasehold/bucket-members/${group}/`, buckets },
    } as LeaseManagerOptions;
    super(inner);
    ref.self = this;
    this.buckets = buckets;
    this.prefix = prefix;
    this.group = group;
  }

  /**
   * Refuses a group whose records were written with another bucket count (a resource would get
   * tokens from another bucket's lease, which may be lower than those it had), then starts as
   * `LeaseManager.start` does.
   */
  override async start(): Promise<void> {
    const others: number[] = [];
    for (let count = 1; count <= MAX_BUCKETS; count *= 2)
      if (count !== this.buckets) others.push(count);
    // Every bucket of a fleet that ran was held at some time, bucket 0 included.
    const found = await Promise.all(
      others.map((count) => this.store.get(`${layoutPrefix(this.group, count)}0`)),
    );
    const used = others.filter((_, i) => found[i] !== null);
    if (used.length > 0)
      throw invalidArgument(
        'buckets',
        `is ${this.buckets}, but group ${JSON.stringify(this.group)} has records of ${used.join(', ')} buckets: a resource's tokens would come from another bucket's lease and could go back; give the group's count, or start a new group`,
      );
    await super.start();
  }

  /** The bucket `resource` falls in. */
  bucketOf(resource: string): number {
    return bucketIndex(checkResource(resource), this.buckets);
  }

  /**
   * The bucket lease that covers `resource`, if this worker holds it: fence the resource's writes
   * with its `token`, and check `isValid()` before acting.
   */
  leaseFor(resource: string): HeldLease | undefined {
    return this.leaseOf(`${this.prefix}${this.bucketOf(resource)}`);
  }

  /** The buckets this worker holds, in index order. */
  heldBuckets(): HeldBucket[] {
    return this.held()
      .map((lease) => this.bucketView(lease))
      .sort((a, b) => a.index - b.index);
  }

  /**
   * Reports the measured load of a bucket this worker holds (by index, or by its lease's resource
   * name); see `LeaseManager.reportLoad`. Returns `false` when this worker does not hold it.
   */
  override reportLoad(bucket: number | string, load: number): boolean {
    if (typeof bucket === 'number') {
      if (!Number.isInteger(bucket) || bucket < 0 || bucket >= this.buckets)
        throw invalidArgument(
          'bucket',
          `must be an integer from 0 to ${this.buckets - 1}, got ${describe(bucket)}`,
        );
      return super.reportLoad(`${this.prefix}${bucket}`, load);
    }
    return super.reportLoad(bucket, load);
  }

  private bucketView(lease: HeldLease): HeldBucket {
    let view = this.views.get(lease);
    if (!view) {
      const index = Number(lease.resource.slice(this.prefix.length));
      if (!lease.resource.startsWith(this.prefix) || !Number.isInteger(index))
        throw new LeaseError(ErrorCode.INVALID_ARGUMENT, `not a bucket lease: ${lease.resource}`);
      const buckets = this.buckets;
      view = {
        index,
        lease,
        contains: (resource) => bucketIndex(checkResource(resource), buckets) === index,
      };
      this.views.set(lease, view);
    }
    return view;
  }
}
