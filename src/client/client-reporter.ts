import type { Clock } from '../core/time.js';
import {
  channels,
  type AcquireResult,
  type LeaseLossCause,
  type StoreOperation,
} from '../core/channels.js';
import {
  errorCode,
  errorText,
  hideUrlSecrets,
  logs,
  type LeaseholdLogger,
} from '../core/logger.js';

/** What the reporter reads of a held lease (a `HeldLease` fits). */
export interface LeaseFacts {
  readonly resource: string;
  /** The store record, where it differs from `resource` (a permit of a counting lease). */
  readonly key?: string;
  readonly owner: string;
  readonly token: number;
  readonly expiresAt: number;
  readonly ttlMs: number;
}

/**
 * Tells the diagnostics channels and the logger what one `LeaseClient` does. Every method checks
 * `hasSubscribers` (and the logger's level) before it builds anything, so with nobody listening
 * a call costs a few property reads.
 */
export class ClientReporter {
  constructor(
    private readonly owner: string,
    private readonly clock: Clock,
    private readonly logger: LeaseholdLogger | undefined,
  ) {}

  /** One resource's acquire attempt, whose request was sent at `tSent` (monotonic). */
  attempt(
    resource: string,
    result: AcquireResult,
    tSent: number,
    detail?: { token?: number; error?: unknown },
  ): void {
    const ch = channels.acquireAttempt;
    if (!ch.hasSubscribers) return;
    const durationMs = this.clock.monotonic() - tSent;
    const { owner } = this;
    if (result === 'error') {
      ch.publish({ owner, resource, result, durationMs, code: errorCode(detail?.error) });
    } else if (detail?.token !== undefined) {
      ch.publish({ owner, resource, result, durationMs, token: detail.token });
    } else ch.publish({ owner, resource, result, durationMs });
  }

  /** An acquire call (`operation`) for `resources`, sent at `tSent`, failed: each attempt, then the call. */
  attemptsFailed(
    operation: StoreOperation,
    resources: readonly string[],
    tSent: number,
    error: unknown,
  ): void {
    for (const resource of resources) this.attempt(resource, 'error', tSent, { error });
    this.storeError(operation, error, resources.length);
  }

  acquired(lease: LeaseFacts): void {
    if (channels.leaseAcquired.hasSubscribers) {
      const { owner, key: resource = lease.resource, token, ttlMs, expiresAt } = lease;
      channels.leaseAcquired.publish({ owner, resource, token, ttlMs, expiresAt });
    }
    if (logs(this.logger, 'debug')) {
      const { owner, key: resource = lease.resource, token, ttlMs } = lease;
      this.logger.debug({ owner, resource, token, ttlMs }, 'lease acquired');
    }
  }

  /** A renewal sent at `tSent` (monotonic) landed. */
  renewed(lease: LeaseFacts, tSent: number): void {
    if (!channels.leaseRenewed.hasSubscribers) return;
    const { owner, key: resource = lease.resource, token, expiresAt } = lease;
    const durationMs = this.clock.monotonic() - tSent;
    channels.leaseRenewed.publish({ owner, resource, token, expiresAt, durationMs });
  }

  atRisk(lease: LeaseFacts, why: string, remainingMs: number): void {
    if (!channels.leaseAtRisk.hasSubscribers && !logs(this.logger, 'warn')) return;
    const reason = hideUrlSecrets(why); // may quote a store error
    if (channels.leaseAtRisk.hasSubscribers) {
      const { owner, key: resource = lease.resource, token } = lease;
      channels.leaseAtRisk.publish({ owner, resource, token, reason, remainingMs });
    }
    if (logs(this.logger, 'warn')) {
      const { owner, key: resource = lease.resource, token } = lease;
      this.logger.warn(
        { owner, resource, token, reason, remainingMs: Math.round(remainingMs) },
        'lease at risk',
      );
    }
  }

  lost(lease: LeaseFacts, cause: LeaseLossCause, error: unknown): void {
    if (channels.leaseLost.hasSubscribers) {
      const { owner, key: resource = lease.resource, token } = lease;
      channels.leaseLost.publish({ owner, resource, token, cause, message: errorText(error) });
    }
    if (logs(this.logger, 'warn')) {
      const { owner, key: resource = lease.resource, token } = lease;
      this.logger.warn(
        { owner, resource, token, cause, err: errorText(error) },
        'lease lost: its work was aborted',
      );
    }
  }

  /** The lease, granted from a request sent at `grantedAt` (monotonic), was given up. */
  released(lease: LeaseFacts, grantedAt: number): void {
    if (channels.leaseReleased.hasSubscribers) {
      const { owner, key: resource = lease.resource, token } = lease;
      const heldMs = this.clock.monotonic() - grantedAt;
      channels.leaseReleased.publish({ owner, resource, token, heldMs });
    }
    if (logs(this.logger, 'debug')) {
      const { owner, key: resource = lease.resource, token } = lease;
      this.logger.debug({ owner, resource, token }, 'lease released');
    }
  }

  /** A release failed: the lease lapses at its TTL instead. */
  releaseFailed(lease: LeaseFacts, error: unknown): void {
    if (!logs(this.logger, 'warn')) return;
    const { owner, key: resource = lease.resource, token } = lease;
    this.logger.warn(
      { owner, resource, token, err: errorText(error) },
      'release failed: the lease will lapse at its TTL',
    );
  }

  /** A store call about `count` leases or resources failed. */
  storeError(operation: StoreOperation, error: unknown, count: number): void {
    const ch = channels.storeError;
    if (ch.hasSubscribers) {
      const { owner } = this;
      ch.publish({ owner, operation, code: errorCode(error), message: errorText(error), count });
    }
    if (logs(this.logger, 'warn')) {
      this.logger.warn(
        { owner: this.owner, operation, code: errorCode(error), count, err: errorText(error) },
        'store call failed',
      );
    }
  }

  /** A store call about `count` leases got no answer within `ms`. */
  storeTimeout(operation: StoreOperation, ms: number, count: number): void {
    if (!channels.storeError.hasSubscribers && !logs(this.logger, 'warn')) return;
    this.storeError(
      operation,
      { code: 'STORE_UNAVAILABLE', message: `${operation} got no answer within ${ms} ms` },
      count,
    );
  }
}
