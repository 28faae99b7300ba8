import { ErrorCode, LeaseError } from '../../core/errors.js';
import { isLive, type Lease, type LeaseRef } from '../../core/lease.js';
import type { AcquireOutcome } from '../../core/store.js';
import type { NatsKv, NatsKvEntry } from './nats-driver.js';
import { keyOf } from './nats-keys.js';
import { decodeEntry, encodeRecord, newNonce, nextToken, type StoredRecord } from './nats-ops.js';
import type { ResolvedNatsOptions } from './nats-options.js';
import type { NatsPublisher } from './nats-publish.js';
import { OwnWrites } from './nats-writes.js';

/**
 * The answer to a write sent for a batch: an error when it got no usable answer, else the
 * result, or `undefined` when the transition needs its full form (a read) to decide.
 */
export type SentAnswer<R> = (error: Error | undefined, result: R | undefined) => void;

/** How many conditional writes one transition tries before giving up on a record that keeps changing. */
const MAX_ATTEMPTS = 4;

/**
 * The transitions on one resource's record, each a read and a conditional write at most a few
 * times over (see `NatsStore` for the protocol). No deadline here: the store bounds each call.
 */
export class NatsTransitions {
  private readonly writes = new OwnWrites();

  constructor(
    private readonly kv: NatsKv,
    private readonly publisher: NatsPublisher,
    private readonly options: ResolvedNatsOptions,
  ) {}

  /** Grants the record when absent, released or expired; else answers with the live holder. */
  async acquire(resource: string, owner: string, ttlMs: number): Promise<AcquireOutcome> {
    const clock = this.options.clock;
    // Released by this store last: write the next grant on that revision without reading first
    // (one request); anyone's write since makes it fail, and the loop below reads.
    const free = this.writes.takeReleased(resource);
    if (free) {
      const granted = await this.grant(resource, owner, ttlMs, free.token + 1, free.revision);
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
      const granted = await this.grant(resource, owner, ttlMs, nextToken(entry, stored), revision);
      if (granted) return { resource, lease: granted };
    }
    return { resource, lease: null };
  }

  /** Writes a grant of `token` conditioned on `revision`; `null` when that revision is stale. */
  private async grant(
    resource: string,
    owner: string,
    ttlMs: number,
    token: number,
    revision: number,
  ): Promise<Lease | null> {
    const nonce = newNonce();
    const expiresAt = this.options.clock.now() + ttlMs;
    this.writes.sending(resource, nonce, revision);
    // No answer (it throws): the write may land later, and a later read of its nonce will tell.
    const written = await this.put(
      keyOf(resource),
      encodeRecord(owner, token, expiresAt, nonce),
      revision,
    );
    this.writes.answered(resource, nonce);
    if (written === null) return null;
    this.writes.remember(resource, { owner, token, nonce, revision: written });
    return { resource, owner, token, expiresAt, ttlMs };
  }

  /** Writes an unsure acquire's record again with a fresh `expiresAt`, if it is still as read. */
  private async rewrite(stored: StoredRecord, ttlMs: number): Promise<Lease | null> {
    const { resource, owner, token } = stored.record;
    const expiresAt = this.options.clock.now() + ttlMs;
    const revision = await this.put(
      keyOf(resource),
      encodeRecord(owner, token, expiresAt, stored.nonce),
      stored.revision,
    );
    if (revision === null) return null;
    this.writes.resolved(resource);
    this.writes.remember(resource, { owner, token, nonce: stored.nonce, revision });
    return { resource, owner, token, expiresAt, ttlMs };
  }

  /** Moves `expiresAt` of a record still the lease's (owner and token); `null` when it is not. */
  async renew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    const ttl = ttlMs ?? lease.ttlMs;
    const expiresAt = this.options.clock.now() + ttl;
    // Never backwards: an older renewal that lands after a newer one (both in flight) finds the
    // newer, later expiry and leaves it be — the holder believes the newer deadline.
    let later: number | undefined;
    const ok = await this.writeOwned(
      lease,
      (nonce) => encodeRecord(lease.owner, lease.token, expiresAt, nonce),
      true,
      (record) => {
        if (record.expiresAt < expiresAt) return false;
        later = record.expiresAt;
        return true;
      },
    );
    if (!ok) return null;
    return {
      resource: lease.resource,
      owner: lease.owner,
      token: lease.token,
      expiresAt: later ?? expiresAt,
      ttlMs: ttl,
    };
  }

  /** Empties the owner of a record still the lease's, keeping its token; `false` when it is not. */
  release(lease: LeaseRef): Promise<boolean> {
    return this.writeOwned(lease, () => encodeRecord('', lease.token, 0, ''), false);
  }

  /**
   * A write to a record that must still be `ref`'s grant: conditioned on our last write's revision
   * when we know it, else on a fresh read that shows the same owner and token (and no write at
   * all when that read is already `enough`). A conflict means
   * the record moved on (our own earlier write whose answer was lost, or a new grant): read again.
   */
  private async writeOwned(
    ref: LeaseRef,
    value: (nonce: string) => Uint8Array,
    keep: boolean,
    enough: (record: { expiresAt: number }) => boolean = () => false,
  ): Promise<boolean> {
    const { resource, owner, token } = ref;
    let base: { revision: number; nonce: string } | undefined = this.writes.knownFor(
      resource,
      owner,
      token,
    );
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      if (!base) {
        const { stored } = await this.read(resource);
        if (!stored || stored.record.owner !== owner || stored.record.token !== token) {
          this.writes.forgetBefore(resource, stored?.revision);
          return false;
        }
        if (enough(stored.record)) return true; // nothing to write: it already says as much
        base = stored;
      }
      const revision = await this.put(keyOf(resource), value(base.nonce), base.revision);
      if (revision === null) {
        base = undefined;
        continue;
      }
      this.wrote(ref, base.nonce, keep, revision);
      return true;
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
    return this.sendOwned(
      lease,
      (nonce) => encodeRecord(lease.owner, lease.token, expiresAt, nonce),
      true,
      (error, written) =>
        done(
          error,
          written && {
            resource: lease.resource,
            owner: lease.owner,
            token: lease.token,
            expiresAt,
            ttlMs: ttl,
          },
        ),
    );
  }

  /** The one-write form of `release`, for batches, as `sendRenew` is of `renew`. */
  sendRelease(lease: LeaseRef, done: SentAnswer<boolean>): boolean {
    return this.sendOwned(lease, () => encodeRecord('', lease.token, 0, ''), false, done);
  }

  /** `writeOwned`'s first attempt, on the revision of our last write only, not awaited. */
  private sendOwned(
    ref: LeaseRef,
    value: (nonce: string) => Uint8Array,
    keep: boolean,
    done: SentAnswer<true>,
  ): boolean {
    const { resource, owner, token } = ref;
    const known = this.writes.knownFor(resource, owner, token);
    if (!known) return false;
    const base = known.revision;
    this.publisher.write(keyOf(resource), value(known.nonce), base, (error, revision) => {
      if (error) return done(error, undefined);
      if (revision === null) {
        this.writes.forgetStale(resource, base);
        return done(undefined, undefined);
      }
      if (keep) this.writes.advance(resource, known, revision);
      else this.wrote(ref, known.nonce, false, revision);
      done(undefined, true);
    });
    return true;
  }

  /** Notes our write of `ref`'s grant at `revision`: the next renew's condition, or a release. */
  private wrote(ref: LeaseRef, nonce: string, keep: boolean, revision: number): void {
    const { resource, owner, token } = ref;
    if (keep) this.writes.remember(resource, { owner, token, nonce, revision });
    else {
      this.writes.forget(resource);
      this.writes.rememberReleased(resource, token, revision);
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
