import type { Clock } from '../core/time.js';
import { channels } from '../core/channels.js';
import type { LeaseFacts } from '../client/client-reporter.js';
import { errorCode, errorText, logs, type LeaseholdLogger } from '../core/logger.js';

/**
 * Tells the diagnostics channels and the logger what one `LeaseManager` does with its fleet. Like
 * `ClientReporter`, nothing is built unless a channel has subscribers or the logger's level is on.
 */
export class FleetReporter {
  constructor(
    private readonly owner: string,
    private readonly group: string,
    private readonly clock: Clock,
    private readonly logger: LeaseholdLogger | undefined,
  ) {}

  /** A lease whose handoff began at `startedAt` (monotonic) was released for another worker. */
  handoff(lease: LeaseFacts, reason: 'balance' | 'unwanted', startedAt: number): void {
    const { owner, group } = this;
    const { resource, token } = lease;
    const durationMs = this.clock.monotonic() - startedAt;
    if (channels.fleetHandoff.hasSubscribers)
      channels.fleetHandoff.publish({ group, owner, resource, token, reason, durationMs });
    if (logs(this.logger, 'debug'))
      this.logger.debug({ group, owner, resource, token, reason, durationMs }, 'lease handed off');
  }

  /** `lease` was taken over from `previousOwner`, whose claim had lapsed `latencyMs` before. */
  takeover(
    lease: LeaseFacts,
    previousOwner: string,
    previousToken: number | undefined,
    latencyMs: number,
  ): void {
    const { owner, group } = this;
    const { resource, token } = lease;
    if (channels.fleetTakeover.hasSubscribers) {
      const message = { group, owner, resource, token, previousOwner, latencyMs };
      channels.fleetTakeover.publish(
        previousToken === undefined ? message : { ...message, previousToken },
      );
    }
    if (logs(this.logger, 'info')) {
      this.logger.info(
        { group, owner, resource, token, previousOwner, latencyMs },
        'took over an expired lease',
      );
    }
  }

  /**
   * A reconcile pass ended: this worker's load against its fair one, among `members` workers.
   * `status` is only called when someone listens (it walks the held leases).
   */
  load(status: () => { load: number; fair: number; weighted: boolean }, members: number): void {
    if (!channels.fleetLoad.hasSubscribers) return;
    const { group, owner } = this;
    channels.fleetLoad.publish({ group, owner, ...status(), members });
  }

  started(held: number): void {
    if (logs(this.logger, 'info'))
      this.logger.info({ group: this.group, owner: this.owner, held }, 'fleet worker started');
  }

  stopped(released: number): void {
    if (logs(this.logger, 'info'))
      this.logger.info({ group: this.group, owner: this.owner, released }, 'fleet worker stopped');
  }

  members(members: readonly string[], share: number): void {
    if (!logs(this.logger, 'info')) return;
    const { group, owner } = this;
    this.logger.info({ group, owner, members: members.length, share }, 'fleet membership changed');
  }

  reconcileFailed(error: unknown): void {
    if (!logs(this.logger, 'warn')) return;
    const { group, owner } = this;
    this.logger.warn(
      { group, owner, code: errorCode(error), err: errorText(error) },
      'reconcile failed; retrying',
    );
  }

  workFailed(lease: LeaseFacts, error: unknown): void {
    if (!logs(this.logger, 'error')) return;
    const { group, owner } = this;
    const { resource, token } = lease;
    this.logger.error(
      { group, owner, resource, token, err: errorText(error) },
      'onAcquired failed; the lease is handed back',
    );
  }
}
