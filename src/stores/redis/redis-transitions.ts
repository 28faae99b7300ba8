import type { Lease, LeaseRef } from '../../core/lease.js';
import type { LeaseData } from '../../core/lease-data.js';
import type { RedisCalls } from './redis-calls.js';
import type { RedisKeys } from './redis-keys.js';
import {
  ACQUIRE,
  ACQUIRE_ALL,
  ACQUIRE_FIRST,
  RELEASE,
  RELEASE_DATA,
  RENEW,
  RENEW_DATA,
  WRITE_DATA,
} from './redis-ops.js';
import { acquired, acquiredAll, acquiredFirst, renewed, storedData } from './redis-record.js';
import { byShard, recordsAndIndexes } from './redis-shards.js';

/**
 * The single-lease transitions and the group ones: each one script call on its own keys, straight
 * to the driver, or, while another call is on the wire, with the others asked meanwhile (see
 * `RedisCalls.together`). Each waits for the layout check on a store's first calls.
 */
export class RedisTransitions {
  constructor(
    private readonly calls: RedisCalls,
    private readonly keys: RedisKeys,
    /** Whether one script can reach every record of the namespace. */
    private readonly oneSlot: boolean,
  ) {}

  tryAcquire(resource: string, owner: string, ttlMs: number): Promise<Lease | null> {
    const { calls, keys } = this;
    if (!calls.layoutReady)
      return calls.afterLayout('tryAcquire', () => this.tryAcquire(resource, owner, ttlMs));
    const reply = (value: unknown): Lease | null => acquired(value, resource, owner, ttlMs);
    if (calls.coalescing())
      return calls.together(
        'tryAcquire',
        { kind: 'acquire', resource, owner, detail: ttlMs },
        reply,
      );
    const shard = keys.shardOf(resource);
    return calls.send(
      'tryAcquire',
      ACQUIRE,
      [keys.recordPrefix(shard) + resource, keys.index(shard)],
      [owner, ttlMs, resource],
      reply,
    );
  }

  /** RENEW, or RENEW_DATA that writes `data` in the same step. */
  renew(lease: Lease, ttlMs: number | undefined, data?: LeaseData | null): Promise<Lease | null> {
    const { calls, keys } = this;
    if (!calls.layoutReady) return calls.afterLayout('renew', () => this.renew(lease, ttlMs, data));
    const ttl = ttlMs ?? lease.ttlMs;
    const { resource, owner, token } = lease;
    if (data === undefined)
      return calls.send(
        'renew',
        RENEW,
        [keys.record(resource)],
        [owner, String(token), ttl],
        (reply) => renewed(reply, lease, ttl),
      );
    return calls.send(
      'renew',
      RENEW_DATA,
      [keys.record(resource)],
      [owner, String(token), ttl, storedData(data)],
      (reply) => renewed(reply, lease, ttl, data),
    );
  }

  /** RELEASE (grouped while a call is on the wire), or RELEASE_DATA that writes `data` in the same step. */
  release(lease: LeaseRef, data?: LeaseData | null): Promise<boolean> {
    const { calls, keys } = this;
    if (!calls.layoutReady) return calls.afterLayout('release', () => this.release(lease, data));
    const { resource, owner, token } = lease;
    if (data !== undefined)
      return calls.send(
        'release',
        RELEASE_DATA,
        [keys.record(resource)],
        [owner, String(token), keys.channel, resource, storedData(data)],
        isReleased,
      );
    if (calls.coalescing())
      return calls.together(
        'release',
        { kind: 'release', resource, owner, detail: String(token) },
        isReleased,
      );
    return calls.send(
      'release',
      RELEASE,
      [keys.record(resource)],
      [owner, String(token), keys.channel, resource],
      isReleased,
    );
  }

  /**
   * One ACQUIRE_ALL call over every member (called only where one script reaches them all, see
   * `capabilities.atomicGroupMax`): the leases in input order, or `null` with nothing written.
   */
  acquireAll(resources: readonly string[], owner: string, ttlMs: number): Promise<Lease[] | null> {
    const { calls } = this;
    if (!calls.layoutReady)
      return calls.afterLayout('acquireAll', () => this.acquireAll(resources, owner, ttlMs));
    return calls.send(
      'acquireAll',
      ACQUIRE_ALL,
      recordsAndIndexes(this.keys, resources),
      [owner, ttlMs, ...resources],
      (value) => acquiredAll(value, resources, owner, ttlMs),
    );
  }

  /**
   * One ACQUIRE_FIRST call over the candidates where one script reaches them all (a single server,
   * one shard, or candidates of one name's family); on a sharded cluster otherwise, one call per
   * shard the candidates fall in, shards in the order of their first candidate, until one grants.
   */
  async acquireFirst(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    const { calls, keys } = this;
    if (!calls.layoutReady)
      return calls.afterLayout('acquireFirst', () => this.acquireFirst(resources, owner, ttlMs));
    const groups = this.oneSlot ? [resources] : byShard(keys, resources);
    // The coalesced call keys every record on the first candidate's shard: only when all are there.
    const shard = keys.shardOf(resources[0]!);
    if (calls.coalescing() && resources.every((r) => keys.shardOf(r) === shard)) {
      // With the other single-lease transitions asked meanwhile: one TRANSITIONS call.
      return calls.together(
        'acquireFirst',
        { kind: 'first', resource: resources[0]!, candidates: resources, owner, detail: ttlMs },
        (value) => acquiredFirst(value, resources, owner, ttlMs),
      );
    }
    for (const group of groups) {
      const lease = await calls.send(
        'acquireFirst',
        ACQUIRE_FIRST,
        recordsAndIndexes(keys, group),
        [owner, ttlMs, ...group],
        (value) => acquiredFirst(value, group, owner, ttlMs),
      );
      if (lease) return lease;
    }
    return null;
  }

  writeData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    const { calls } = this;
    if (!calls.layoutReady)
      return calls.afterLayout('writeData', () => this.writeData(lease, data));
    const { resource, owner, token } = lease;
    return calls.send(
      'writeData',
      WRITE_DATA,
      [this.keys.record(resource)],
      [owner, String(token), storedData(data)],
      isReleased,
    );
  }
}

/** A script's 1 (done) or 0 (not ours). */
export const isReleased = (reply: unknown): boolean => Number(reply) === 1;
