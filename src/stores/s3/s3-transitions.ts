import { ErrorCode, LeaseError } from '../../core/errors.js';
import { isLive, type Lease, type LeaseRecord, type LeaseRef } from '../../core/lease.js';
import type { AcquireOutcome } from '../../core/store.js';
import type { KeySpace } from './s3-keys.js';
import { statusOf } from './s3-errors.js';
import type { ObjectIo } from './s3-objects.js';
import { decodeRecord, encodeRecord, newWriteId, type Versioned } from './s3-ops.js';

/** How many conditional PUTs a renew or release tries before giving up on a busy object. */
const TRIES = 4;

/** The last write this store made for a lease it holds: lets a renew skip its read. */
interface Written {
  readonly owner: string;
  readonly token: number;
  readonly etag: string;
}

/**
 * The lease transitions on objects: a read, then a PUT conditioned on what was read. Whether a
 * write landed is decided by the answer when it is clear (200, or 412 on the first attempt) and
 * otherwise (409, 5xx, a 412 after the SDK's retries) by reading the object back and looking for
 * the write's own id: never by the status alone.
 */
export class Transitions {
  /** By resource; bounded, and only a shortcut: a stale entry costs one refused PUT. */
  private readonly written = new Map<string, Written>();
  /** Records this store released last (token kept, ETag of that write): the next acquire skips its GET. */
  private readonly released = new Map<string, { token: number; etag: string }>();

  constructor(
    private readonly io: ObjectIo,
    private readonly keys: KeySpace,
    private readonly now: () => number,
    private readonly skewMs: number,
  ) {}

  async read(operation: string, resource: string): Promise<Versioned | null> {
    const key = this.keys.keyOf(resource);
    const got = await this.io.get(operation, key);
    return got && { ...decodeRecord(got.body, resource, key), etag: got.etag };
  }

  /**
   * Read; when the record is absent, released or expired past the skew allowance, a PUT
   * conditioned on the ETag read (`If-None-Match: *` when absent) with the token raised by one.
   * A refused PUT means another contender wrote first: `null`.
   */
  async acquire(
    resource: string,
    owner: string,
    ttlMs: number,
    operation: string,
  ): Promise<AcquireOutcome> {
    const key = this.keys.keyOf(resource);
    // Released by this store last: the next grant is a PUT on the ETag of that release, without a
    // GET (anyone's write since makes it refused, and the read below decides).
    const free = this.released.get(resource);
    this.released.delete(resource);
    let seen: Versioned | null | undefined; // the object as a read after an unclear PUT found it
    if (free) {
      const write = newWriteId();
      const lease: Lease = {
        resource,
        owner,
        token: free.token + 1,
        expiresAt: this.now() + ttlMs,
        ttlMs,
      };
      const result = await this.io.put(operation, key, encodeRecord(lease, write), {
        etag: free.etag,
      });
      if (result.kind === 'written') {
        this.remember(lease, result.etag);
        return { resource, lease };
      }
      if (result.kind === 'unclear') {
        seen = await this.read(operation, resource);
        if (seen?.write === write) {
          this.remember(lease, seen.etag);
          return { resource, lease };
        }
      }
    }
    const current = seen !== undefined ? seen : await this.read(operation, resource);
    if (current && isLive(current.record, this.now(), this.skewMs))
      return { resource, lease: null, holder: current.record };
    const write = newWriteId();
    const expiresAt = this.now() + ttlMs;
    const lease: Lease = {
      resource,
      owner,
      token: (current?.record.token ?? 0) + 1,
      expiresAt,
      ttlMs,
    };
    const result = await this.io.put(
      operation,
      key,
      encodeRecord(lease, write),
      current ? { etag: current.etag } : { absent: true },
    );
    if (result.kind === 'written') {
      this.remember(lease, result.etag);
      return { resource, lease };
    }
    if (result.kind === 'refused') return { resource, lease: null };
    const after = await this.read(operation, resource);
    if (after?.write === write) {
      this.remember(lease, after.etag);
      return { resource, lease };
    }
    // Nothing landed: a failure, except S3's 409 (another conditional write was in flight), a "no".
    if (after?.etag === current?.etag && statusOf(result.error) !== 409) throw result.error;
    return after && isLive(after.record, this.now(), this.skewMs)
      ? { resource, lease: null, holder: after.record }
      : { resource, lease: null };
  }

  /** A PUT of a later `expiresAt`, conditioned on the ETag of a record still at our owner and token. */
  async renew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    const ttl = ttlMs ?? lease.ttlMs;
    // Never backwards: a record of ours already expiring later (a newer renewal landed first)
    // is left as it is, and the renewal succeeds.
    const renewed = await this.replace(
      'renew',
      lease,
      (record) => ({ ...record, expiresAt: this.now() + ttl }),
      (record) => record.expiresAt >= this.now() + ttl,
    );
    return renewed && { ...renewed, ttlMs: ttl };
  }

  /** A PUT of owner `''` and `expiresAt` 0, token kept; the object is never deleted. */
  async release(lease: LeaseRef): Promise<boolean> {
    const released = await this.replace('release', lease, (record) => ({
      ...record,
      owner: '',
      expiresAt: 0,
    }));
    this.forget(lease);
    return released !== null;
  }

  /**
   * Replaces a record that is still at `lease`'s owner and token with `next(record)`. The first
   * PUT names the ETag of this store's own last write when it knows one (no read); after that,
   * each try reads first. A read showing another owner or token answers `null`; a read showing
   * one of this call's writes answers that write (it landed, its answer was lost or unclear).
   */
  private async replace(
    operation: string,
    lease: LeaseRef,
    next: (record: LeaseRecord) => LeaseRecord,
    enough: (record: LeaseRecord) => boolean = () => false,
  ): Promise<LeaseRecord | null> {
    const key = this.keys.keyOf(lease.resource);
    const mine = new Map<string, LeaseRecord>();
    const known = this.written.get(lease.resource);
    let etag = known?.owner === lease.owner && known.token === lease.token ? known.etag : undefined;
    let failure: unknown;
    for (let attempt = 0; attempt < TRIES; attempt++) {
      if (etag === undefined) {
        const current = await this.read(operation, lease.resource);
        const landed = current && mine.get(current.write);
        if (landed) {
          this.remember(landed, current.etag);
          return landed;
        }
        if (current?.record.owner !== lease.owner || current.record.token !== lease.token) {
          this.forget(lease);
          return null;
        }
        if (enough(current.record)) {
          this.remember(current.record, current.etag);
          return current.record;
        }
        etag = current.etag;
      }
      const write = newWriteId();
      const record = next({
        resource: lease.resource,
        owner: lease.owner,
        token: lease.token,
        expiresAt: 0,
      });
      mine.set(write, record);
      const result = await this.io.put(operation, key, encodeRecord(record, write), { etag });
      if (result.kind === 'written') {
        this.remember(record, result.etag);
        return record;
      }
      if (result.kind === 'unclear') failure = result.error;
      etag = undefined;
    }
    throw (
      failure ??
      new LeaseError(
        ErrorCode.STORE_UNAVAILABLE,
        `S3 ${operation} of ${JSON.stringify(lease.resource)} failed: the object changed under ${TRIES} conditional writes in a row`,
      )
    );
  }

  /** Drops what this store remembers of `lease`'s writes, and nothing about another grant. */
  private forget(lease: LeaseRef): void {
    const known = this.written.get(lease.resource);
    if (known?.owner === lease.owner && known.token === lease.token)
      this.written.delete(lease.resource);
  }

  private remember(record: LeaseRecord, etag: string): void {
    if (record.owner === '') {
      this.written.delete(record.resource);
      if (this.released.size >= 10_000) this.released.clear();
      this.released.set(record.resource, { token: record.token, etag });
      return;
    }
    if (this.written.size >= 10_000) this.written.clear();
    this.written.set(record.resource, { owner: record.owner, token: record.token, etag });
  }
}
