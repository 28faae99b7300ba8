import type { LeaseTransitions } from '../../core/delegating-store.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import type { LeaseData } from '../../core/lease-data.js';
import type { RedisCalls } from './redis-calls.js';
import type { RedisClient } from './redis-driver.js';
import { isWrongType } from './redis-errors.js';
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
import {
  acquired,
  acquiredAll,
  acquiredFirst,
  notAHash,
  redisRecord,
  renewed,
  storedData,
} from './redis-record.js';
import { byShard, recordsAndIndexes } from './redis-shards.js';

/**
 * The single-lease transitions and the group ones: each one script call on its own keys, straight
 * to the driver, or, while another call is on the wire, with the others asked meanwhile (see
 * `RedisCalls.together`). Each waits for the layout check on a store's first calls.
 */
export class RedisTransitions implements LeaseTransitions {
  constructor(
    private readonly calls: RedisCalls,
    private readonly client: RedisClient,
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

  /** RENEW. */
  renew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    const { calls, keys } = this;
    if (!calls.layoutReady) return calls.afterLayout('renew', () => this.renew(lease, ttlMs));
    const ttl = ttlMs ?? lease.ttlMs;
    const { resource, owner, token } = lease;
    return calls.send(
      'renew',
      RENEW,
      [keys.record(resource)],
      [owner, String(token), ttl],
      (reply) => renewed(reply, lease, ttl),
    );
  }

  /** RENEW_DATA, which writes `data` in the same step as the renewal. */
  renewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    const { calls, keys } = this;
    if (!calls.layoutReady)
      return calls.afterLayout('renew', () => this.renewWithData(lease, ttlMs, data));
    const ttl = ttlMs ?? lease.ttlMs;
    const { resource, owner, token } = lease;
    return calls.send(
      'renew',
      RENEW_DATA,
      [keys.record(resource)],
      [owner, String(token), ttl, storedData(data)],
      (reply) => renewed(reply, lease, ttl, data),
    );
  }

  /** RELEASE, grouped with others while a call is on the wire. */
  release(lease: LeaseRef): Promise<boolean> {
    const { calls, keys } = this;
    if (!calls.layoutReady) return calls.afterLayout('release', () => this.release(lease));
    const { resource, owner, token } = lease;
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

  /** RELEASE_DATA, which writes `data` in the same step as the release. */
  releaseWithData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    const { calls, keys } = this;
    if (!calls.layoutReady)
      return calls.afterLayout('release', () => this.releaseWithData(lease, data));
    const { resource, owner, token } = lease;
    return calls.send(
      'release',
      RELEASE_DATA,
      [keys.record(resource)],
      [owner, String(token), keys.channel, resource, storedData(data)],
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

  /** One HMGET of the record's fields. */
  async get(resource: string): Promise<LeaseRecord | null> {
    const [owner, token, expiresAt, data] = await this.calls.call('get', () =>
      this.client
        .hmget(this.keys.record(resource), 'owner', 'token', 'expiresAt', 'data')
        .catch((error: unknown) => {
          if (!isWrongType(error)) throw error;
          throw notAHash(resource, error);
        }),
    );
    return redisRecord(resource, owner, token, expiresAt, data);
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
