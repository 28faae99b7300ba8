import { ErrorCode, LeaseError } from '../../core/errors.js';
import { isLive, type Lease, type LeaseRef } from '../../core/lease.js';
import type { AcquireOutcome } from '../../core/store.js';
import type { NatsKv, NatsKvEntry } from './nats-driver.js';
import { isConflict } from './nats-errors.js';
import { keyOf } from './nats-keys.js';
import { decodeEntry, encodeRecord, newNonce, nextToken, type StoredRecord } from './nats-ops.js';
import type { ResolvedNatsOptions } from './nats-options.js';
import { OwnWrites } from './nats-writes.js';

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
    let written: number;
    try {
      written = await this.put(
        keyOf(resource),
        encodeRecord(owner, token, expiresAt, nonce),
        revision,
      );
    } catch (error) {
      // No answer: the write may land later, and a later read of its nonce will tell.
      if (!isConflict(error)) throw error;
      this.writes.answered(resource, nonce);
      return null;
    }
    this.writes.answered(resource, nonce);
    this.writes.remember(resource, { owner, token, nonce, revision: written });
    return { resource, owner, token, expiresAt, ttlMs };
  }

  /** Writes an unsure acquire's record again with a fresh `expiresAt`, if it is still as read. */
  private async rewrite(stored: StoredRecord, ttlMs: number): Promise<Lease | null> {
    const { resource, owner, token } = stored.record;
    const expiresAt = this.options.clock.now() + ttlMs;
    try {
      const revision = await this.put(
        keyOf(resource),
        encodeRecord(owner, token, expiresAt, stored.nonce),
        stored.revision,
      );
      this.writes.resolved(resource);
      this.writes.remember(resource, { owner, token, nonce: stored.nonce, revision });
      return { resource, owner, token, expiresAt, ttlMs };
    } catch (error) {
      if (isConflict(error)) return null;
      throw error;
    }
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
      try {
        const revision = await this.put(keyOf(resource), value(base.nonce), base.revision);
        if (keep) this.writes.remember(resource, { owner, token, nonce: base.nonce, revision });
        else {
          this.writes.forget(resource);
          this.writes.rememberReleased(resource, token, revision);
        }
        return true;
      } catch (error) {
        if (!isConflict(error)) throw error;
        base = undefined;
      }
    }
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `NATS KV record of ${JSON.stringify(resource)} changed under ${MAX_ATTEMPTS} conditional writes in a row`,
      { resource },
    );
  }

  /** The key's last entry and what it holds. */
  async read(
    resource: string,
  ): Promise<{ entry: NatsKvEntry | null; stored: StoredRecord | null }> {
    const entry = await this.kv.get(keyOf(resource));
    return { entry, stored: decodeEntry(resource, entry) };
  }

  private put(key: string, data: Uint8Array, previousSeq: number): Promise<number> {
    return this.kv.put(key, data, { previousSeq, timeout: this.options.timeoutMs });
  }
}
