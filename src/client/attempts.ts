import { ErrorCode, LeaseError } from '../core/errors.js';
import type { Lease, LeaseRecord } from '../core/lease.js';
import { checkGroup, checkResource, checkResources } from '../core/options.js';
import { permitResources } from '../core/permits.js';
import { rotated } from '../core/store-defaults.js';
import type { ResolvedClientOptions } from './client-options.js';
import type { ClientReporter } from './client-reporter.js';
import { HeldGroup } from './held-group.js';
import type { HeldLease } from './held-lease.js';
import type { LeaseBook } from './lease-book.js';
import type { LeaseOps } from './lease-ops.js';

/** One resource's answer to `tryAcquireMany`. */
export interface HeldOutcome {
  /** The resource this answer is for (answers come in the order of the names asked). */
  readonly resource: string;
  /** The lease, now kept alive by this client; `null` when someone else holds it. */
  readonly lease: HeldLease | null;
  /** The live record that stood in the way, when the store reports it. */
  readonly holder?: LeaseRecord;
}

/** What `Attempts` needs of the client it acquires for. */
export interface AttemptsOptions extends Pick<
  ResolvedClientOptions,
  'store' | 'owner' | 'ttlMs' | 'clock'
> {
  /** Tells the diagnostics channels and the logger of each attempt and store error. */
  readonly report: ClientReporter;
  /** Makes handles of grants and keeps them; knows what this client holds already. */
  readonly book: LeaseBook;
  /** Gives back grants that cannot be handed out, and a group's members. */
  readonly ops: LeaseOps;
  /** Whether the client is closing: a grant is then given back, never handed out. */
  readonly closing: () => boolean;
  /** Throws `CLIENT_CLOSED` when the client is closing. */
  readonly assertOpen: () => void;
}

/**
 * Acquisition attempts, each one store call: one lease or any free permit of a name (`tryOnce`),
 * many independent leases (`tryAcquireMany`), or a whole group (`tryGroupOnce`). A grant is
 * handed out only if it is still valid, the client is not closing and it is not held already;
 * otherwise it is given back at once.
 */
export class Attempts {
  private readonly report: ClientReporter;
  private readonly book: LeaseBook;
  private readonly ops: LeaseOps;

  constructor(private readonly options: AttemptsOptions) {
    ({ report: this.report, book: this.book, ops: this.ops } = options);
  }

  /** One acquisition attempt: the lease, or why there is none. */
  async tryOnce(
    resource: string,
    permits: number,
  ): Promise<HeldLease | 'held-by-other' | 'too-late'> {
    this.options.assertOpen();
    const candidates = this.candidates(checkResource(resource), permits);
    const { store, owner, ttlMs, clock } = this.options;
    const tSent = clock.monotonic();
    const operation = candidates.length === 1 ? 'tryAcquire' : 'acquireFirst';
    let lease: Lease | null;
    try {
      lease =
        candidates.length === 1
          ? await store.tryAcquire(candidates[0]!, owner, ttlMs)
          : await store.acquireFirst(candidates, owner, ttlMs);
    } catch (error) {
      this.report.attemptsFailed(operation, [resource], tSent, error);
      throw error;
    }
    if (!lease) {
      this.report.attempt(resource, 'held-by-other', tSent);
      return 'held-by-other';
    }
    const held = this.book.grant(lease, tSent);
    if (!held.isValid() || this.options.closing() || this.book.has(held.key)) {
      this.report.attempt(resource, 'too-late', tSent, { token: held.token });
      // The answer came after the deadline measured from when the request left (or the client
      // is closing): never hand it out.
      await this.ops.releaseQuietly(held);
      this.options.assertOpen();
      return 'too-late';
    }
    this.report.attempt(resource, 'acquired', tSent, { token: held.token });
    this.book.adopt([held]);
    return held;
  }

  /**
   * The records one attempt may take: the resource itself, or the permits of the name this client
   * does not hold yet, starting at a random one so that callers arriving together spread out.
   */
  private candidates(resource: string, permits: number): string[] {
    if (permits === 1) {
      this.book.assertNotHeld(resource);
      return [resource];
    }
    const free = permitResources(resource, permits).filter((key) => !this.book.has(key));
    if (free.length === 0)
      throw new LeaseError(
        ErrorCode.INVALID_ARGUMENT,
        `this client already holds all ${permits} permits of ${JSON.stringify(resource)}`,
        { resource },
      );
    return rotated(free);
  }

  /**
   * The attempt of `LeaseClient.tryAcquireMany`: one `acquireMany`, one outcome per resource in
   * input order, each grant checked as `tryOnce` checks its one.
   */
  async tryAcquireMany(resources: readonly string[]): Promise<HeldOutcome[]> {
    this.options.assertOpen();
    for (const resource of checkResources(resources)) this.book.assertNotHeld(resource);
    const { store, owner, ttlMs, clock } = this.options;
    const tSent = clock.monotonic();
    let outcomes;
    try {
      outcomes = await store.acquireMany(resources, owner, ttlMs);
    } catch (error) {
      this.report.attemptsFailed('acquireMany', resources, tSent, error);
      throw error;
    }
    const late: HeldLease[] = [];
    const result = outcomes.map((outcome): HeldOutcome => {
      if (!outcome.lease) {
        this.report.attempt(outcome.resource, 'held-by-other', tSent);
        return outcome as HeldOutcome;
      }
      const held = this.book.grant(outcome.lease, tSent);
      if (!held.isValid() || this.options.closing() || this.book.has(held.key)) {
        this.report.attempt(outcome.resource, 'too-late', tSent, { token: held.token });
        late.push(held);
        return { resource: outcome.resource, lease: null };
      }
      this.report.attempt(outcome.resource, 'acquired', tSent, { token: held.token });
      return { resource: outcome.resource, lease: held };
    });
    if (late.length > 0) await this.ops.releaseManyQuietly(late);
    this.book.adopt(result.flatMap(({ lease }) => (lease ? [lease] : [])));
    return result;
  }

  /** One attempt at a whole group (`acquireAll` in one store call): the group, or why there is none. */
  async tryGroupOnce(
    resources: readonly string[],
  ): Promise<HeldGroup | 'held-by-other' | 'too-late'> {
    this.options.assertOpen();
    for (const resource of checkGroup(resources)) this.book.assertNotHeld(resource);
    const names = [...resources];
    const { store, owner, ttlMs, clock } = this.options;
    const tSent = clock.monotonic();
    let leases: Lease[] | null;
    try {
      leases = await store.acquireAll(names, owner, ttlMs);
    } catch (error) {
      this.report.attemptsFailed('acquireAll', names, tSent, error);
      throw error;
    }
    if (!leases) {
      for (const resource of names) this.report.attempt(resource, 'held-by-other', tSent);
      return 'held-by-other';
    }
    const members = leases.map((lease) => this.book.grant(lease, tSent));
    if (this.options.closing() || members.some((m) => !m.isValid() || this.book.has(m.key))) {
      for (const m of members)
        this.report.attempt(m.resource, 'too-late', tSent, { token: m.token });
      await this.ops.releaseManyQuietly(members);
      this.options.assertOpen();
      return 'too-late';
    }
    for (const held of members)
      this.report.attempt(held.resource, 'acquired', tSent, { token: held.token });
    const group = new HeldGroup(members, {
      releaseMany: (leases) => this.ops.releaseMany(leases),
      releaseQuietly: (leases) => this.ops.releaseManyQuietly(leases),
    });
    this.book.adopt(members);
    return group;
  }
}
