import {
  ErrorCode,
  isLeaseError,
  type HeldLease,
  type LeaseClient,
  type LeaseStore,
} from '../../index.js';
import { formatDuration } from '../duration.js';
import { expiresText, viewRecord } from '../format.js';
import { CliFailure } from '../output.js';
import { RUN_EXIT, signalExitCode } from './exit-codes.js';
import type { SignalRelay } from './signal-relay.js';
import { quoted } from '../escape.js';
import { acquireSayingWait } from '../waiting.js';

/**
 * Waits up to `waitMs` for the lease. A signal ends the wait with exit 128+N; a lease still held by
 * another owner when the wait runs out ends it with `RUN_EXIT.unavailable` and one line naming them.
 */
export async function acquireForRun(
  client: LeaseClient,
  store: LeaseStore,
  resource: string,
  waitMs: number,
  signals: SignalRelay,
  family: { permits?: number; fair?: boolean } = {},
): Promise<HeldLease> {
  const interrupt = new AbortController();
  signals.onSignal = (signal) =>
    interrupt.abort(
      new CliFailure(
        `interrupted by ${signal} while waiting for the lease on ${quoted(resource)}`,
        signalExitCode(signal),
      ),
    );
  let held: HeldLease;
  try {
    held = await acquireSayingWait(client, store, resource, waitMs, interrupt.signal, family);
  } catch (error) {
    if (!isLeaseError(error, ErrorCode.LEASE_UNAVAILABLE)) throw error;
    throw new CliFailure(
      (family.permits ?? 1) > 1
        ? `${ErrorCode.LEASE_UNAVAILABLE}: ${error.message}`
        : await unavailableLine(store, resource, waitMs, error.message),
      RUN_EXIT.unavailable,
    );
  } finally {
    signals.onSignal = () => undefined;
  }
  // A signal that came while the winning attempt was in flight still wins: give the lease back.
  if (interrupt.signal.aborted) {
    await held.release().catch(() => undefined);
    throw interrupt.signal.reason;
  }
  return held;
}

/**
 * The line for a lease not acquired: its live holder when the store shows one, else the client's
 * own account (held by an owner gone since, or granted too late to use).
 */
async function unavailableLine(
  store: LeaseStore,
  resource: string,
  waitMs: number,
  clientMessage: string,
): Promise<string> {
  const waited = waitMs > 0 ? ` (waited ${formatDuration(waitMs)})` : '';
  const record = await store.get(resource).catch(() => null);
  if (!record || record.owner === '') return `${ErrorCode.LEASE_UNAVAILABLE}: ${clientMessage}`;
  const view = viewRecord(record, Date.now(), store.maxClockSkewMs);
  return `${ErrorCode.LEASE_UNAVAILABLE}: lease on ${quoted(resource)} is held by ${quoted(record.owner)} with token ${record.token}, expiring ${expiresText(view)}${waited}`;
}
