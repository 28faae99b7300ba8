import { ErrorCode, LeaseError } from '../core/errors.js';
import type { HeldLease, LeaseState } from './held-lease.js';

/** @internal What a `HeldGroup` asks of the client that made it. */
export interface GroupKeeper {
  /** Gives members back with one store call (one bounded attempt); rejects when it failed. */
  releaseMany(leases: readonly HeldLease[]): Promise<void>;
  /** Gives members back after the group broke; a failure is reported, never thrown. */
  releaseQuietly(leases: readonly HeldLease[]): Promise<void>;
}

/**
 * Leases on several resources granted together (`acquireAll`): every member or none was granted,
 * and the group is one thing to the work. One `signal` aborts when any member is lost or given up
 * (the others are then released at once: the set is no longer whole), the deadline is the earliest
 * member's, heartbeats renew every member in the client's one `renewMany` per beat, and
 * `release()` gives all back in one call. Each member keeps its own fencing token.
 */
export class HeldGroup {
  /** The members, in the order the resources were asked for. */
  readonly leases: readonly HeldLease[];
  private readonly controller = new AbortController();
  private broken = false;

  /** @internal Only a `LeaseClient` and its parts make these. */
  constructor(
    leases: readonly HeldLease[],
    private readonly keeper: GroupKeeper,
  ) {
    this.leases = Object.freeze([...leases]);
    for (const lease of this.leases) {
      lease.once('lost', (error) => this.memberEnded(lease, error));
      lease.once('released', () => this.memberEnded(lease, undefined));
    }
  }

  /** The resources of the group, in the order they were asked for. */
  get resources(): string[] {
    return this.leases.map((l) => l.resource);
  }

  /** The member on `resource`, if the group has it. */
  lease(resource: string): HeldLease | undefined {
    return this.leases.find((l) => l.resource === resource);
  }

  /** Each member's fencing token, by resource: pass them to downstream writes. */
  get tokens(): Record<string, number> {
    return Object.fromEntries(this.leases.map((l) => [l.resource, l.token]));
  }

  /**
   * Aborts the moment any member is lost (`LEASE_LOST`, naming it) or the group is given up
   * (`LEASE_RELEASED`): the work tied to the whole set stops there.
   */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The earliest member deadline (design rule 2), on the monotonic clock. */
  get validUntil(): number {
    return Math.min(...this.leases.map((l) => l.validUntil));
  }

  /**
   * `held`, `at-risk` when any member is, `lost` when any member was lost, `released` when the
   * group (or any member of it) was given up.
   */
  get state(): LeaseState {
    const states = this.leases.map((l) => l.state);
    if (states.includes('lost')) return 'lost';
    if (states.includes('released')) return 'released';
    return states.includes('at-risk') ? 'at-risk' : 'held';
  }

  /** Whether every member may still be relied on right now (reads the clock: see `HeldLease.isValid`). */
  isValid(): boolean {
    return !this.broken && this.leases.every((l) => l.isValid());
  }

  /** Milliseconds left before the earliest member deadline (0 once the group is broken). */
  remainingMs(): number {
    return this.broken ? 0 : Math.min(...this.leases.map((l) => l.remainingMs()));
  }

  /** Renews every member now (for `autoRenew: false`); rejects with `LEASE_LOST` if any is gone. */
  async renew(): Promise<void> {
    await Promise.all(this.leases.map((l) => l.renew()));
  }

  /** Aborts the work, then gives every member back with one store call. */
  async release(): Promise<void> {
    this.break(this.releasedReason());
    await this.keeper.releaseMany(this.leases);
  }

  /** `await using group = …` releases the group at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** A plain snapshot for logs: the members and the group's state. */
  toJSON(): object {
    return { state: this.state, validUntil: this.validUntil, leases: this.leases };
  }

  private memberEnded(lease: HeldLease, error: LeaseError | undefined): void {
    if (this.broken) return;
    this.break(error ?? this.releasedReason(lease));
    // The set is no longer whole: let the rest go now instead of at their TTL.
    const rest = this.leases.filter((l) => l !== lease && !l.isTerminal);
    if (rest.length > 0) void this.keeper.releaseQuietly(rest);
  }

  private break(reason: LeaseError): void {
    if (this.broken) return;
    this.broken = true;
    this.controller.abort(reason);
  }

  private releasedReason(member?: HeldLease): LeaseError {
    const why = member ? `its member ${JSON.stringify(member.resource)} was released` : 'released';
    return new LeaseError(
      ErrorCode.LEASE_RELEASED,
      `group of ${this.leases.length} leases (${describeNames(this.leases)}) ${why}`,
      { retryable: false },
    );
  }
}

function describeNames(leases: readonly HeldLease[]): string {
  const names = leases.slice(0, 3).map((l) => JSON.stringify(l.resource));
  return leases.length > 3 ? `${names.join(', ')}, …` : names.join(', ');
}
