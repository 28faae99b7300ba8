import { ErrorCode, LeaseError } from '../../core/errors.js';
import { KeyedQueue } from '../../core/keyed-queue.js';
import { isLive, type Lease, type LeaseRecord, type LeaseRef } from '../../core/lease.js';
import { decodeData, encodeData, withData, type LeaseData } from '../../core/lease-data.js';
import type { RecordCalls } from '../../core/record-calls.js';
import type { AcquireOutcome } from '../../core/store.js';
import type { KeySpace } from './s3-keys.js';
import { statusOf } from './s3-errors.js';
import type { ObjectIo } from './s3-objects.js';
import { decodeRecord, encodeRecord, newWriteId, type Versioned } from './s3-record.js';

/** How many conditional PUTs a renew or release tries before giving up on a busy object. */
const TRIES = 4;

/**
 * The last write this store made for a lease it holds: lets a renew skip its read, and says what
 * that write holds (a PUT replaces the body whole).
 */
interface Written {
  readonly owner: string;
  readonly token: number;
  readonly etag: string;
  readonly expiresAt: number;
  /** The lease data of that write, in `encodeData`'s form (`null`: none). */
  readonly data: string | null;
}

/** What a record still a lease's holds, as a replacing write starts from it. */
interface Base {
  readonly expiresAt: number;
  readonly data: string | null;
}

/**
 * What a write replacing a record still a lease's puts: owner (the lease's, or `''` for a
 * release), expiry and data (`encodeData`'s form; the base's, unchanged, unless the write sets it).
 */
interface Replacement {
  readonly owner: string;
  readonly expiresAt: number;
  readonly data: string | null;
}

/**
 * The lease transitions on objects: a read, then a PUT conditioned on what was read. Whether a
 * write landed is decided by the answer when it is clear (200, or 412 on the first attempt) and
 * otherwise (409, 5xx, a 412 after the SDK's retries) by reading the object back and looking for
 * the write's own id: never by the status alone.
 */
export class S3Transitions implements RecordCalls {
  /** By resource; bounded, and only a shortcut: a stale entry costs one refused PUT. */
  private readonly written = new Map<string, Written>();
  /** Records this store released last (token kept, ETag of that write): the next acquire skips its GET. */
  private readonly released = new Map<
    string,
    { token: number; etag: string; data: string | null }
  >();
  /** `writeData` calls of one resource, one at a time (see `writeData`). */
  private readonly dataWrites = new KeyedQueue();

  constructor(
    private readonly io: ObjectIo,
    private readonly keys: KeySpace,
    private readonly now: () => number,
    private readonly skewMs: number,
  ) {}

  /** The record, live or not (one GET); `null` when there is no object. */
  async get(resource: string): Promise<LeaseRecord | null> {
    return (await this.read('get', resource))?.record ?? null;
  }

  async read(operation: string, resource: string): Promise<Versioned | null> {
    const key = this.keys.keyOf(resource);
    const got = await this.io.get(operation, key);
    return got && { ...decodeRecord(got.body, resource, key), etag: got.etag };
  }

  /**
   * Read; when the record is absent, released or expired past the skew allowance, a PUT
   * conditioned on the ETag read (`If-None-Match: *` when absent) with the token raised by one,
   * carrying the record's data. A refused PUT means someone wrote first: a read tells whether
   * that made the record live (`null`, with the holder) or left it free (an expired holder's late
   * release or data write), then it is tried again, up to `TRIES` PUTs.
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
      const lease: Lease = withData(
        { resource, owner, token: free.token + 1, expiresAt: this.now() + ttlMs, ttlMs },
        decodeData(free.data, resource),
      );
      const result = await this.io.put(operation, key, encodeRecord(lease, write, free.data), {
        etag: free.etag,
      });
      if (result.kind === 'written') {
        this.remember(lease, result.etag, free.data);
        return { resource, lease };
      }
      if (result.kind === 'unclear') {
        seen = await this.read(operation, resource);
        if (seen?.write === write) {
          this.remember(lease, seen.etag, free.data);
          return { resource, lease };
        }
      }
    }
    for (let attempt = 0; attempt < TRIES; attempt++) {
      const current = seen !== undefined ? seen : await this.read(operation, resource);
      if (current && isLive(current.record, this.now(), this.skewMs))
        return { resource, lease: null, holder: current.record };
      const write = newWriteId();
      const expiresAt = this.now() + ttlMs;
      // The data the previous holders left goes on with the grant, in the same PUT.
      const data = current?.data ?? null;
      const lease: Lease = withData(
        { resource, owner, token: (current?.record.token ?? 0) + 1, expiresAt, ttlMs },
        current?.record.data,
      );
      const result = await this.io.put(
        operation,
        key,
        encodeRecord(lease, write, data),
        current ? { etag: current.etag } : { absent: true },
      );
      if (result.kind === 'written') {
        this.remember(lease, result.etag, data);
        return { resource, lease };
      }
      const after = await this.read(operation, resource);
      if (after?.write === write) {
        this.remember(lease, after.etag, data);
        return { resource, lease };
      }
      // Nothing landed: a failure, except S3's 409 (another conditional write was in flight), a "no".
      if (
        result.kind === 'unclear' &&
        after?.etag === current?.etag &&
        statusOf(result.error) !== 409
      )
        throw result.error;
      // Someone wrote first. A new grant makes the record live (a refusal, next turn); a write
      // that left it free (an ex-holder's late release or data write) is tried again on.
      seen = after;
    }
    return { resource, lease: null };
  }

  /**
   * A PUT of a later `expiresAt`, conditioned on the ETag of a record still at our owner and
   * token. With `data` (not `undefined`) it is set in the same PUT; without, the PUT carries the
   * data of the record it replaces, and the answer the caller's `lease.data`.
   */
  async renew(
    lease: Lease,
    ttlMs: number | undefined,
    data?: LeaseData | null,
  ): Promise<Lease | null> {
    const ttl = ttlMs ?? lease.ttlMs;
    const text = data === undefined ? undefined : encodeData(data);
    const renewed = await this.replace('renew', lease, (base, read) => {
      const expiresAt = this.now() + ttl;
      // Never backwards: a record of ours already expiring later (a newer renewal landed first)
      // keeps that expiry, and the renewal succeeds (without a write when it sets no new data).
      const later = read && base.expiresAt >= expiresAt;
      if (later && (text === undefined || text === base.data)) return undefined;
      return {
        owner: lease.owner,
        expiresAt: later ? base.expiresAt : expiresAt,
        data: text === undefined ? base.data : text,
      };
    });
    if (renewed === null) return null;
    const { resource, owner, token } = lease;
    const answer = { resource, owner, token, expiresAt: renewed.expiresAt, ttlMs: ttl };
    return withData(answer, data === undefined ? lease.data : data);
  }

  /**
   * A PUT of owner `''` and `expiresAt` 0, token and data kept (or `data` set, when given); the
   * object is never deleted.
   */
  async release(lease: LeaseRef, data?: LeaseData | null): Promise<boolean> {
    const text = data === undefined ? undefined : encodeData(data);
    const released = await this.replace('release', lease, (base) => ({
      owner: '',
      expiresAt: 0,
      data: text === undefined ? base.data : text,
    }));
    this.forget(lease);
    return released !== null;
  }

  /**
   * A PUT of the record with `data`, owner, token and expiry as they are, conditioned as a renew
   * is. This store's writes of one resource's data go one after another: racing each other on one
   * ETag, all but one would be refused and read again.
   */
  writeData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    const text = encodeData(data);
    return this.dataWrites.run(lease.resource, async () => {
      const written = await this.replace('writeData', lease, (base) => ({
        owner: lease.owner,
        expiresAt: base.expiresAt,
        data: text,
      }));
      return written !== null;
    });
  }

  /**
   * Replaces a record that is still at `lease`'s owner and token with what `next` makes of it
   * (`read`: the base comes from a read, not from this store's own last write; `undefined`: the
   * record read already says as much, and nothing is written). The first PUT names the ETag of
   * this store's own last write when it knows one (no read); after that, each try reads first. A
   * read showing another owner or token answers `null`; a read showing one of this call's writes
   * answers that write (it landed, its answer was lost or unclear).
   */
  private async replace(
    operation: string,
    lease: LeaseRef,
    next: (base: Base, read: boolean) => Replacement | undefined,
  ): Promise<Replacement | null> {
    const { resource, owner, token } = lease;
    const key = this.keys.keyOf(resource);
    const mine = new Map<string, Replacement>();
    const known = this.written.get(resource);
    let base: (Base & { etag: string }) | undefined =
      known?.owner === owner && known.token === token ? known : undefined;
    let read = false;
    let failure: unknown;
    for (let attempt = 0; attempt < TRIES; attempt++) {
      if (base === undefined) {
        const current = await this.read(operation, resource);
        const landed = current && mine.get(current.write);
        if (landed) {
          const { expiresAt, data } = landed;
          this.remember({ resource, token, owner: landed.owner, expiresAt }, current.etag, data);
          return landed;
        }
        if (current?.record.owner !== owner || current.record.token !== token) {
          this.forget(lease);
          return null;
        }
        base = { etag: current.etag, expiresAt: current.record.expiresAt, data: current.data };
        read = true;
      }
      const replacement = next(base, read);
      if (replacement === undefined) {
        this.remember({ resource, owner, token, expiresAt: base.expiresAt }, base.etag, base.data);
        return { owner, expiresAt: base.expiresAt, data: base.data };
      }
      const write = newWriteId();
      const record = {
        resource,
        token,
        owner: replacement.owner,
        expiresAt: replacement.expiresAt,
      };
      mine.set(write, replacement);
      const body = encodeRecord(record, write, replacement.data);
      const result = await this.io.put(operation, key, body, { etag: base.etag });
      if (result.kind === 'written') {
        this.remember(record, result.etag, replacement.data);
        return replacement;
      }
      if (result.kind === 'unclear') failure = result.error;
      base = undefined;
    }
    throw (
      failure ??
      new LeaseError(
        ErrorCode.STORE_UNAVAILABLE,
        `S3 ${operation} of ${JSON.stringify(resource)} failed: the object changed under ${TRIES} conditional writes in a row`,
      )
    );
  }

  /** Drops what this store remembers of `lease`'s writes, and nothing about another grant. */
  private forget(lease: LeaseRef): void {
    const known = this.written.get(lease.resource);
    if (known?.owner === lease.owner && known.token === lease.token)
      this.written.delete(lease.resource);
  }

  /** Notes this store's write of `record` (with `data`, `encodeData`'s form) at `etag`. */
  private remember(record: LeaseRecord, etag: string, data: string | null): void {
    const { resource, owner, token, expiresAt } = record;
    if (owner === '') {
      this.written.delete(resource);
      if (this.released.size >= 10_000) this.released.clear();
      this.released.set(resource, { token, etag, data });
      return;
    }
    if (this.written.size >= 10_000) this.written.clear();
    this.written.set(resource, { owner, token, etag, expiresAt, data });
  }
}
