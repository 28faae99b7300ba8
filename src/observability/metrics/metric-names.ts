/** Bucket bounds, in seconds, for renewal latency: a store round trip, from 1 ms to 10 s. */
export const RENEW_BUCKETS: readonly number[] = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/** Bucket bounds, in seconds, for takeover and handoff latency: up to a couple of long TTLs. */
export const HANDOVER_BUCKETS: readonly number[] = [
  0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120,
];

/** One metric under both stacks' naming conventions. */
export interface MetricName {
  readonly prometheus: string;
  readonly openTelemetry: string;
  readonly help: string;
}

/** Every metric leasehold records. */
export const METRICS = {
  held: {
    prometheus: 'leasehold_leases_held',
    openTelemetry: 'leasehold.leases.held',
    help: 'Leases held now by the LeaseClients and LeaseManagers of this process.',
  },
  attempts: {
    prometheus: 'leasehold_acquire_attempts_total',
    openTelemetry: 'leasehold.acquire.attempts',
    help: 'Acquire attempts, one per resource tried, by result.',
  },
  renew: {
    prometheus: 'leasehold_renew_duration_seconds',
    openTelemetry: 'leasehold.renew.duration',
    help: 'How long successful renewals took, from request sent to answer, one per lease renewed.',
  },
  lost: {
    prometheus: 'leasehold_leases_lost_total',
    openTelemetry: 'leasehold.leases.lost',
    help: 'Leases lost, by cause (taken, expired, store-error).',
  },
  atRisk: {
    prometheus: 'leasehold_at_risk_transitions_total',
    openTelemetry: 'leasehold.at_risk.transitions',
    help: 'Times a held lease turned at-risk (renewals failing, or a third of its validity left).',
  },
  takeover: {
    prometheus: 'leasehold_takeover_duration_seconds',
    openTelemetry: 'leasehold.takeover.duration',
    help: 'How long a resource whose holder let its lease expire went unowned before a LeaseManager took it over.',
  },
  handoff: {
    prometheus: 'leasehold_handoff_duration_seconds',
    openTelemetry: 'leasehold.handoff.duration',
    help: 'How long a LeaseManager took to hand a lease over, from aborting its work to the release landing, by reason.',
  },
  fleetLoad: {
    prometheus: 'leasehold_fleet_load',
    openTelemetry: 'leasehold.fleet.load',
    help: 'What each LeaseManager of this process holds, by group and owner: the total weight of its leases when its fleet weighs them, else their count.',
  },
  fleetFairLoad: {
    prometheus: 'leasehold_fleet_fair_load',
    openTelemetry: 'leasehold.fleet.fair_load',
    help: "Each LeaseManager's fair load, by group and owner: the fleet's total weight split by capacity, or its share of the count. Beside leasehold_fleet_load it shows the fleet's balance.",
  },
  storeErrors: {
    prometheus: 'leasehold_store_errors_total',
    openTelemetry: 'leasehold.store.errors',
    help: 'Failed store calls of the LeaseClients, by error code and operation.',
  },
} as const satisfies Record<string, MetricName>;
