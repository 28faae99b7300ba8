import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import {
  LeaseholdChannel,
  type AcquireAttemptMessage,
  type FleetHandoffMessage,
  type FleetLoadMessage,
  type FleetTakeoverMessage,
  type LeaseAcquiredMessage,
  type LeaseLostMessage,
  type LeaseMessage,
  type LeaseRenewedMessage,
  type StoreErrorMessage,
} from '../../core/channels.js';

/** What a metrics adapter records; durations in seconds. */
export interface MetricsSink {
  held(delta: 1 | -1): void;
  attempt(result: string): void;
  renewed(seconds: number): void;
  lost(cause: string): void;
  atRisk(): void;
  takeover(seconds: number): void;
  handoff(seconds: number, reason: string): void;
  storeError(code: string, operation: string): void;
  /** A manager's load and fair load now; `undefined` once it stopped (its series go). */
  fleetLoad(group: string, owner: string, load: { load: number; fair: number } | undefined): void;
}

/**
 * Subscribes `sink` to every leasehold channel, so every client and manager in the process is
 * counted; returns the unsubscriber. A lease counts as held from its `acquired` message to its
 * `lost` or `released` one: leases granted before the subscription are not counted (so the gauge
 * never goes below what it saw).
 */
export function subscribeSink(sink: MetricsSink): () => void {
  const held = new Set<string>();
  const key = (m: LeaseMessage): string => `${m.token}\u0000${m.owner}\u0000${m.resource}`;
  const ended = (m: LeaseMessage): void => {
    if (held.delete(key(m))) sink.held(-1);
  };
  const handlers: [string, (message: unknown) => void][] = [
    [
      LeaseholdChannel.leaseAcquired,
      (m) => {
        const k = key(m as LeaseAcquiredMessage);
        if (held.has(k)) return;
        held.add(k);
        sink.held(1);
      },
    ],
    [
      LeaseholdChannel.leaseRenewed,
      (m) => sink.renewed((m as LeaseRenewedMessage).durationMs / 1000),
    ],
    [LeaseholdChannel.leaseAtRisk, () => sink.atRisk()],
    [
      LeaseholdChannel.leaseLost,
      (m) => {
        sink.lost((m as LeaseLostMessage).cause);
        ended(m as LeaseLostMessage);
      },
    ],
    [LeaseholdChannel.leaseReleased, (m) => ended(m as LeaseMessage)],
    [LeaseholdChannel.acquireAttempt, (m) => sink.attempt((m as AcquireAttemptMessage).result)],
    [
      LeaseholdChannel.storeError,
      (m) => sink.storeError((m as StoreErrorMessage).code, (m as StoreErrorMessage).operation),
    ],
    [
      LeaseholdChannel.fleetHandoff,
      (m) =>
        sink.handoff(
          (m as FleetHandoffMessage).durationMs / 1000,
          (m as FleetHandoffMessage).reason,
        ),
    ],
    [
      LeaseholdChannel.fleetLoad,
      (m) => {
        const { group, owner, load, fair, members } = m as FleetLoadMessage;
        sink.fleetLoad(group, owner, members === 0 ? undefined : { load, fair });
      },
    ],
    [
      LeaseholdChannel.fleetTakeover,
      (m) => sink.takeover((m as FleetTakeoverMessage).latencyMs / 1000),
    ],
  ];
  for (const [name, handler] of handlers) subscribe(name, handler);
  return () => {
    for (const [name, handler] of handlers) unsubscribe(name, handler);
    held.clear();
  };
}
