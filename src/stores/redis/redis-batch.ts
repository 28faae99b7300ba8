import type { LeaseBatches } from '../../core/delegating-store.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import type { AcquireOutcome } from '../../core/store.js';
import type { RedisCalls } from './redis-calls.js';
import {
  MAX_ACQUIRE_KEYS,
  MAX_SCRIPT_LEASES,
  runScript,
  type RedisClient,
} from './redis-driver.js';
import type { RedisKeys } from './redis-keys.js';
import { listRecords } from './redis-list.js';
import { ACQUIRE_MANY, RELEASE_MANY, RENEW_MANY } from './redis-ops.js';
import { acquiredMany, renewed } from './redis-record.js';
import { perShard } from './redis-shards.js';
import { isReleased } from './redis-transitions.js';

/**
 * The batches: one script call per shard and up to 1,000 resources (`perShard`), sent without
 * waiting for each other, the whole within one command deadline; and `list`.
 */
export class RedisBatch implements LeaseBatches {
  constructor(
    private readonly calls: RedisCalls,
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  /** One ACQUIRE_MANY call per shard and 1,000 resources; a blocked outcome carries its holder. */
  acquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    return this.batch('acquireMany', resources, itself, MAX_ACQUIRE_KEYS, async (group, shard) => {
      const recordPrefix = this.keys.recordPrefix(shard);
      const reply = (await runScript(
        this.client,
        ACQUIRE_MANY,
        [this.keys.index(shard), ...group.map((resource) => recordPrefix + resource)],
        [owner, ttlMs, Buffer.byteLength(recordPrefix)],
      )) as (string | number)[];
      return acquiredMany(reply, group, owner, ttlMs);
    });
  }

  renewMany(leases: readonly Lease[], ttlMs: number | undefined): Promise<(Lease | null)[]> {
    // Each call's leases are answered as its reply arrives, so no step handles the whole batch.
    return this.batch('renewMany', leases, resourceOf, MAX_SCRIPT_LEASES, (group) =>
      runScript(
        this.client,
        RENEW_MANY,
        group.map((l) => this.keys.record(l.resource)),
        group.flatMap((l) => [l.owner, String(l.token), ttlMs ?? l.ttlMs]),
        (reply) =>
          group.map((lease, k) => renewed((reply as unknown[])[k], lease, ttlMs ?? lease.ttlMs)),
      ),
    );
  }

  releaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    return this.batch('releaseMany', leases, resourceOf, MAX_SCRIPT_LEASES, (group) =>
      runScript(
        this.client,
        RELEASE_MANY,
        group.map((l) => this.keys.record(l.resource)),
        [this.keys.channel, ...group.flatMap((l) => [l.owner, String(l.token), l.resource])],
        (reply) => (reply as unknown[]).map(isReleased),
      ),
    );
  }

  /** One LIST script per shard, the pages merged in order (see `listRecords`). */
  list(prefix: string, limit: number, after: string): Promise<LeaseRecord[]> {
    return listRecords(this.calls, this.client, this.keys, { prefix, limit, after });
  }

  /** `perShard` within one command deadline. */
  private batch<T, R>(
    operation: string,
    items: readonly T[],
    resource: (item: T) => string,
    maxPerCall: number,
    script: (group: readonly T[], shard: number) => Promise<R[]>,
  ): Promise<R[]> {
    return this.calls.call(operation, () =>
      perShard(this.keys, items, resource, maxPerCall, script),
    );
  }
}

const itself = (resource: string): string => resource;
const resourceOf = (lease: LeaseRef): string => lease.resource;
