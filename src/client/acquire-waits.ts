import { checkGroup } from '../core/options.js';
import { permitMatcher } from '../core/permits.js';
import { commonPrefix } from '../core/store-defaults.js';
import type { Attempts } from './attempts.js';
import type { ResolvedClientOptions } from './client-options.js';
import { FairLine } from './fair-line.js';
import type { HeldGroup } from './held-group.js';
import type { HeldLease } from './held-lease.js';
import type { LeaseOps } from './lease-ops.js';
import { ReleaseWake, type Wake } from './release-wake.js';
import { waitForGrant } from './wait-loop.js';
import { joinWakeLine, lineAsleep } from './wake-line.js';

/** What `AcquireWaits` needs of the client it waits for. */
export interface AcquireWaitsOptions extends Pick<
  ResolvedClientOptions,
  'store' | 'clock' | 'owner' | 'ttlMs' | 'heartbeatMs' | 'maxClockSkewMs'
> {
  /** The attempts waited around. */
  readonly attempts: Attempts;
  /** Gives back a grant that arrived after the wait was aborted. */
  readonly ops: LeaseOps;
  /** Throws `CLIENT_CLOSED` when the client is closing. */
  readonly assertOpen: () => void;
}

/**
 * The waiting acquisitions, each around one kind of attempt: a lease with jittered backoff cut
 * short by a release of the name (`forLease`), in line behind earlier fair waiters (`inLine`), or
 * a whole group cut short by a release of any member (`forGroup`).
 */
export class AcquireWaits {
  private readonly attempts: Attempts;
  private readonly ops: LeaseOps;

  constructor(private readonly options: AcquireWaitsOptions) {
    ({ attempts: this.attempts, ops: this.ops } = options);
  }

  /** `acquire` without `fair`: the waiting loop (see `waitForGrant`) around `tryOnce`. */
  async forLease(
    resource: string,
    permits: number,
    waitMs: number,
    signal: AbortSignal | undefined,
  ): Promise<HeldLease> {
    // Opened only once an attempt was refused: a lease granted at once costs no subscription.
    let wake: Wake | undefined;
    try {
      return await waitForGrant(
        this.options,
        `lease on ${JSON.stringify(resource)}${permits > 1 ? ` (all ${permits} permits)` : ''}`,
        resource,
        waitMs,
        signal,
        () => this.attempts.tryOnce(resource, permits),
        (held) => this.ops.releaseQuietly(held),
        (since) =>
          (wake ??= joinWakeLine(
            this.options.store,
            this.options.clock,
            `${permits}\u0000${resource}`,
            resource,
            permitMatcher(resource, permits),
            since,
          )),
        () => lineAsleep(this.options.store, `${permits}\u0000${resource}`),
      );
    } finally {
      wake?.close();
    }
  }

  /** Fair waiting: in line behind earlier fair waiters on the name (see `FairLine`). */
  async inLine(
    resource: string,
    permits: number,
    waitMs: number,
    signal: AbortSignal | undefined,
  ): Promise<HeldLease> {
    this.options.assertOpen();
    const line = new FairLine({
      store: this.options.store,
      clock: this.options.clock,
      owner: this.options.owner,
      ttlMs: this.options.ttlMs,
      heartbeatMs: this.options.heartbeatMs,
      maxClockSkewMs: this.options.maxClockSkewMs,
      name: resource,
      permits,
    });
    return line.wait(
      waitMs,
      signal,
      () => this.attempts.tryOnce(resource, permits),
      (held) => this.ops.releaseQuietly(held),
    );
  }

  /** `acquireAll`: the waiting loop (see `waitForGrant`) around `tryGroupOnce`. */
  async forGroup(
    resources: readonly string[],
    waitMs: number,
    signal: AbortSignal | undefined,
  ): Promise<HeldGroup> {
    const names = new Set(checkGroup(resources));
    let wake: Wake | undefined;
    try {
      return await waitForGrant(
        this.options,
        `group of ${resources.length} leases (${resources
          .slice(0, 3)
          .map((r) => JSON.stringify(r))
          .join(', ')}${resources.length > 3 ? ', …' : ''})`,
        undefined,
        waitMs,
        signal,
        () => this.attempts.tryGroupOnce(resources),
        (group) => this.ops.releaseManyQuietly(group.leases),
        () =>
          (wake ??= ReleaseWake.for(this.options.store, commonPrefix(resources), (r) =>
            names.has(r),
          )),
      );
    } finally {
      wake?.close();
    }
  }
}
