import { ErrorCode, LeaseError } from '../../core/errors.js';
import { isLive, type Lease, type LeaseRef } from '../../core/lease.js';
import { decodeData, encodeData, withData, type LeaseData } from '../../core/lease-data.js';
import { KeyedQueue } from '../../core/keyed-queue.js';
import type { AcquireOutcome } from '../../core/store.js';
import type { NatsKv, NatsKvEntry } from './nats-driver.js';
import { keyOf } from './nats-keys.js';
import {
  decodeEntry,
  encodeRecord,
  newNonce,
  nextToken,
  type StoredRecord,
} from './nats-record.js';
import type { ResolvedNatsOptions } from './nats-options.js';
import type { NatsPublisher } from './nats-publish.js';
import { OwnWrites, type KnownWrite } from './nats-writes.js';

/**
 * The answer to a write sent for a batch: an error when it got no usable answer, else the
 * result, or `undefined` when the transition needs its full form (a read) to decide.
 */
export type SentAnswer<R> = (error: Error | undefined, result: R | undefined) => void;

/** How many conditional writes one transition tries before giving up on a record that keeps changing. */
const MAX_ATTEMPTS = 4;

/** What a record still a lease's holds at a revision: the base of a write conditioned on it. */
type Base = Pick<KnownWrite, 'revision' | 'nonce' | 'expiresAt' | 'data'>;

/**
 * What a write to a record still a lease's puts besides owner, token and nonce (kept, or emptied
 * by a release): its expiry and its data (`encodeData`'s form). A value is written whole, so a
 * write that does not set the data carries the base's, unchanged.
 */
interface OwnedWrite {
  readonly expiresAt: number;
  readonly data: string | null;
}

/**
 * The transitions on one resource's record, each a read and a conditional write at most a few
 * times over (see `NatsStore` for the protocol). No deadline here: the store bounds each call.
 */
export class NatsTransitions {
  private readonly writes = new OwnWrites();
  /** `writeData` calls of one resource, one at a time (see `writeData`). */
  private readonly dataWrites = new KeyedQueue();

  constructor(
    private readonly kv: NatsKv,
    private readonly publisher: NatsPublisher,
    private readonly options: ResolvedNatsOptions,
  ) {}

  /**
   * A record as the store's watch delivered it (`null`: deleted) at `revision`. A release is
   * noted, so that the next acquire here writes its grant on that revision without reading first,
   * as after a release of our own (the write's condition makes a stale note cost one more read,
   * never a wrong grant); anything else written since makes a note older than it stale.
   */
  seen(resource: string, stored: StoredRecord | null, revision: number): void {
    if (stored !== null && stored.record.owner === '') {
      const { token } = stored.record;
      this.writes.noteReleased(resource, { token, revision, data: stored.data });
    } else this.writes.takenAt(resource, revision);
  }

  /** The watch stopped or failed: its notes of releases go (see `OwnWrites.forgetSeen`). */
  forgetSeen(): void {
    this.writes.forgetSeen();
  }

  /** Grants the record when absent, released or expired; else answers with the live holder. */
  async acquire(resource: string, owner: string, ttlMs: number): Promise<AcquireOutcome> {
    const clock = this.options.clock;
    // Released by this store last, or seen released by its watch: write the next grant on that
    // revision without reading first (one request); anyone's write since makes it fail, and the
    // loop below reads.
    const free = this.writes.takeReleased(resource);
    // A token with no safe successor goes the long way, which refuses it with RECORD_INVALID.
    if (free && Number.isSafeInteger(free.token + 1)) {
      const { token, revision, data } = free;
      const granted = await this.grant(resource, owner, ttlMs, token + 1, revision, data);
      if (granted) return { resource, lease: granted };
    }
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const { entry, stored } = await this.read(resource);
      const revision = entry?.revision ?? 0;
      if (stored && isLive(stored.record, clock.now(), this.options.maxClockSkewMs)) {
        if (stored.record.owner !== owner || !this.writes.isOurs(resource, stored.nonce)) {
          return { resource, lease: null, holder: stored.record };
        }
        // An acquire of ours whose answer was lost did land: adopt it, renewed from now.
        const lease = await this.rewrite(stored, ttlMs);
        if (lease) return { resource, lease };
        continue;
      }
      this.writes.settle(resource, revision, stored?.nonce);
      const token = nextToken(entry, stored);
      const granted = await this.grant(
        resource,
        owner,
        ttlMs,
        token,
        revision,
        stored?.data ?? null,
      );
      if (granted) return { resource, lease: granted };
    }
    return { resource, lease: null };
  }

  /**
   * Writes a grant of `token` conditioned on `revision`, carrying `data`, the lease data the record
   * holds at that revision; `null` when that revision is stale.
   */
  private async grant(
    resource: string,
    owner: string,
    ttlMs: number,
    token: number,
    revision: number,
    data: string | null,
  ): Promise<Lease | null> {
    const nonce = newNonce();
    const expiresAt = this.options.clock.now() + ttlMs;
    this.writes.sending(resource, nonce, revision);
    // No answer (it throws): the write may land later, and a later read of its nonce will tell.
    const written = await this.put(
      keyOf(resource),
      encodeRecord(owner, token, expiresAt, nonce, data),
      revision,
    );
    this.writes.answered(resource, nonce);
    if (written === null) return null;
    this.writes.remember(resource, { owner, token, nonce, revision: written, expiresAt, data });
    return withData({ resource, owner, token, expiresAt, ttlMs }, decodeData(data, resource));
  }

  /** Writes an unsure acquire's record again with a fresh `expiresAt`, if it is still as read. */
  private async rewrite(stored: StoredRecord, ttlMs: number): Promise<Lease | null> {
    const { resource, owner, token } = stored.record;
    const { nonce, data } = stored;
    const expiresAt = this.options.clock.now() + ttlMs;
    const revision = await this.put(
      keyOf(resource),
      encodeRecord(owner, token, expiresAt, nonce, data),
      stored.revision,
    );
    if (revision === null) return null;
    this.writes.resolved(resource);
    this.writes.remember(resource, { owner, token, nonce, revision, expiresAt, data });
    return withData({ resource, owner, token, expiresAt, ttlMs }, stored.record.data);
  }

  /**
   * Moves `expiresAt` of a record still the lease's (owner and token); `null` when it is not. With
   * `data` (not `undefined`), sets it in the same write; without, the value written carries the
   * data of the revision it is conditioned on, and the answer the caller's `lease.data`.
   */
  async renew(
    lease: Lease,
    ttlMs: number | undefined,
    data?: LeaseData | null,
  ): Promise<Lease | null> {
    const ttl = ttlMs ?? lease.ttlMs;
    const expiresAt = this.options.clock.now() + ttl;
    const text = data === undefined ? undefined : encodeData(data);
    const written = await this.writeOwned(
      lease,
      (base, read) => {
        // Never backwards: an older renewal that lands after a newer one (both in flight) finds
        // the newer, later expiry and leaves it be — the holder believes the newer deadline.
        const later = read && base.expiresAt >= expiresAt;
        if (later && (text === undefined || text === base.data)) return undefined;
        return {
          expiresAt: later ? base.expiresAt : expiresAt,
          data: text === undefined ? base.data : text,
        };
      },
      true,
    );
    if (!written) return null;
    const { resource, owner, token } = lease;
    const renewed = { resource, owner, token, expiresAt: written.expiresAt, ttlMs: ttl };
    return withData(renewed, data === undefined ? lease.data : data);
  }

  /**
   * Empties the owner of a record still the lease's, keeping its token and its data (or setting
   * `data` when given); `false` when it is not.
   */
  async release(lease: LeaseRef, data?: LeaseData | null): Promise<boolean> {
    const text = data === undefined ? undefined : encodeData(data);
    const written = await this.writeOwned(
      lease,
      (base) => ({ expiresAt: 0, data: text === undefined ? base.data : text }),
      false,
    );
    return written !== null;
  }

  /**
   * Sets the data of a record still the lease's, its expiry as it is; `false` when it is not.
   * This store's writes of one resource's data go one after another, each on the revision the one
   * before wrote: racing each other on one revision, all but one would fail and read again.
   */
  async writeData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    const text = encodeData(data);
    const written = await this.dataWrites.run(lease.resource, () =>
      this.writeOwned(lease, (base) => ({ expiresAt: base.expiresAt, data: text }), true),
    );
    return written !== null;
  }

  /**
   * A write to a record that must still be `ref`'s grant: conditioned on our last write's revision
   * when we know it, else on a fresh read that shows the same owner and token. `next` says what to
   * write on that base (`read`: the base comes from a read, not from our own last write), or
   * `undefined` when the record read already says as much: then nothing is written. A conflict
   * means the record moved on (our own earlier write whose answer was lost, or a new grant): read
   * again. Answers what the record holds after the call, or `null` when it is not `ref`'s.
   */
  private async writeOwned(
    ref: LeaseRef,
    next: (base: Base, read: boolean) => OwnedWrite | undefined,
    keep: boolean,
  ): Promise<OwnedWrite | null> {
    const { resource, owner, token } = ref;
    let base: Base | undefined = this.writes.knownFor(resource, owner, token);
    let read = false;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      if (!base) {
        // A record that is no longer one leasehold writes is not this lease's: not ours.
        const stored = await this.read(resource).then(
          (found) => found.stored,
          (error: unknown) => {
            if (isRecordInvalid(error)) return undefined;
            throw error;
          },
        );
        if (stored === undefined) return null;
        if (!stored || stored.record.owner !== owner || stored.record.token !== token) {
          this.writes.forgetBefore(resource, stored?.revision);
          return null;
        }
        const { revision, nonce, data } = stored;
        base = { revision, nonce, data, expiresAt: stored.record.expiresAt };
        read = true;
      }
      const write = next(base, read);
      if (write === undefined) return base; // nothing to write: it already says as much
      const value = keep
        ? encodeRecord(owner, token, write.expiresAt, base.nonce, write.data)
        : encodeRecord('', token, 0, '', write.data);
      const revision = await this.put(keyOf(resource), value, base.revision);
      if (revision === null) {
        base = undefined;
        continue;
      }
      this.wrote(ref, base.nonce, keep, revision, write);
      return write;
    }
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `NATS KV record of ${JSON.stringify(resource)} changed under ${MAX_ATTEMPTS} conditional writes in a row`,
      { resource },
    );
  }

  /**
   * The one-write form of `renew`, for batches: when this store knows its last write of the
   * lease's grant, sends the write conditioned on that revision and answers through `done` without
   * waiting on it; `false` when it knows none. `done` gets `undefined` for a revision gone stale
   * (forgotten here): `renew` then reads the record and decides.
   */
  sendRenew(lease: Lease, ttlMs: number | undefined, done: SentAnswer<Lease | null>): boolean {
    const ttl = ttlMs ?? lease.ttlMs;
    const expiresAt = this.options.clock.now() + ttl;
    const { resource, owner, token } = lease;
    return this.sendOwned(lease, expiresAt, true, (error, written) =>
      done(
        error,
        written && withData({ resource, owner, token, expiresAt, ttlMs: ttl }, lease.data),
      ),
    );
  }

  /** The one-write form of `release`, for batches, as `sendRenew` is of `renew`. */
  sendRelease(lease: LeaseRef, done: SentAnswer<boolean>): boolean {
    return this.sendOwned(lease, 0, false, done);
  }

  /**
   * `writeOwned`'s first attempt, on the revision of our last write only, not awaited: a renewal
   * to `expiresAt` (`keep`) or a release, carrying the data of that revision, unchanged.
   */
  private sendOwned(
    ref: LeaseRef,
    expiresAt: number,
    keep: boolean,
    done: SentAnswer<true>,
  ): boolean {
    const { resource, owner, token } = ref;
    const known = this.writes.knownFor(resource, owner, token);
    if (!known) return false;
    const base = known.revision;
    const { nonce, data } = known;
    const value = keep
      ? encodeRecord(owner, token, expiresAt, nonce, data)
      : encodeRecord('', token, 0, '', data);
    this.publisher.write(keyOf(resource), value, base, (error, revision) => {
      if (error) return done(error, undefined);
      if (revision === null) {
        this.writes.forgetStale(resource, base);
        return done(undefined, undefined);
      }
      if (keep) this.writes.advance(resource, known, revision, expiresAt);
      else this.wrote(ref, nonce, false, revision, { expiresAt, data });
      done(undefined, true);
    });
    return true;
  }

  /** Notes our write of `ref`'s grant at `revision`: the next renew's condition, or a release. */
  private wrote(
    ref: LeaseRef,
    nonce: string,
    keep: boolean,
    revision: number,
    { expiresAt, data }: OwnedWrite,
  ): void {
    const { resource, owner, token } = ref;
    if (keep) this.writes.remember(resource, { owner, token, nonce, revision, expiresAt, data });
    else {
      this.writes.forget(resource);
      this.writes.rememberReleased(resource, { token, revision, data });
    }
  }

  /** The key's last entry and what it holds. */
  async read(
    resource: string,
  ): Promise<{ entry: NatsKvEntry | null; stored: StoredRecord | null }> {
    const entry = await this.kv.get(keyOf(resource));
    return { entry, stored: decodeEntry(resource, entry) };
  }

  /** A conditional write: the revision written, `null` when `previousSeq` was stale. */
  private put(key: string, data: Uint8Array, previousSeq: number): Promise<number | null> {
    return this.publisher.put(key, data, previousSeq);
  }
}

/** Whether `error` is `RECORD_INVALID`: a record read that leasehold did not write. */
export function isRecordInvalid(error: unknown): boolean {
  return error instanceof LeaseError && error.code === ErrorCode.RECORD_INVALID;
}
