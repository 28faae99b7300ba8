import type { IncomingMessage, ServerResponse } from 'node:http';
import { loadPackage } from '../../core/load-driver.js';
import { prometheusMetrics } from '../../observability/metrics/prometheus.js';
import { INTERNAL_PREFIX, leaseState, type LeaseState } from '../live/lease-state.js';
import type { LeaseObserver } from '../live/observer.js';

/** The subset of prom-client the dashboard uses. */
interface PromClient {
  Registry: new () => PromRegistry;
  Gauge: new (config: {
    name: string;
    help: string;
    labelNames?: string[];
    registers: PromRegistry[];
    collect?: (this: PromGauge) => void;
  }) => PromGauge;
  Counter: new (config: {
    name: string;
    help: string;
    labelNames?: string[];
    registers: PromRegistry[];
  }) => { inc(labels: Record<string, string>, value?: number): void };
}
interface PromRegistry {
  readonly contentType: string;
  metrics(): Promise<string>;
}
interface PromGauge {
  set(labels: Record<string, string>, value: number): void;
  reset(): void;
}

const STATES: readonly LeaseState[] = ['held', 'at-risk', 'expired', 'released'];

/**
 * `/metrics` for the dashboard, in Prometheus text: what it observes in the store — records by
 * state, live leases per owner, transitions seen (acquired, handoff, released, expired) and failed
 * listings — and the leasehold metrics of this process's own clients and managers (none for the
 * CLI; a program that starts the dashboard beside its workers gets theirs). Needs `prom-client`.
 */
export async function storeMetrics(
  observer: LeaseObserver,
  skewMs: number,
): Promise<{
  handler: (request: IncomingMessage, response: ServerResponse) => Promise<void>;
  stop(): void;
}> {
  const prom = await loadPackage<PromClient>('prom-client', 'the dashboard’s /metrics need');
  const registry = new prom.Registry();
  const registers = [registry];
  new prom.Gauge({
    name: 'leasehold_observed_leases',
    help: 'Lease records the dashboard sees in the store, by state (leasehold/ bookkeeping records left out).',
    labelNames: ['state'],
    registers,
    collect() {
      const counts = new Map<LeaseState, number>(STATES.map((s) => [s, 0]));
      const now = Date.now();
      for (const [resource, tracked] of observer.tracker.tracked) {
        if (resource.startsWith(INTERNAL_PREFIX)) continue;
        const state = leaseState(tracked.record, now, skewMs, tracked.ttlEstimateMs);
        counts.set(state, (counts.get(state) ?? 0) + 1);
      }
      for (const [state, n] of counts) this.set({ state }, n);
    },
  });
  new prom.Gauge({
    name: 'leasehold_observed_leases_by_owner',
    help: 'Live leases (held or at risk) the dashboard sees per owner.',
    labelNames: ['owner'],
    registers,
    collect() {
      this.reset();
      const counts = new Map<string, number>();
      const now = Date.now();
      for (const [resource, tracked] of observer.tracker.tracked) {
        if (resource.startsWith(INTERNAL_PREFIX)) continue;
        const state = leaseState(tracked.record, now, skewMs, tracked.ttlEstimateMs);
        if (state !== 'held' && state !== 'at-risk') continue;
        counts.set(tracked.record.owner, (counts.get(tracked.record.owner) ?? 0) + 1);
      }
      for (const [owner, n] of counts) this.set({ owner }, n);
    },
  });
  const transitions = new prom.Counter({
    name: 'leasehold_observed_transitions_total',
    help: 'Changes the dashboard saw between two listings of the store, by type.',
    labelNames: ['type'],
    registers,
  });
  const failures = new prom.Counter({
    name: 'leasehold_observed_listing_errors_total',
    help: 'Listings of the store that failed.',
    registers,
  });
  const unsubscribe = observer.onUpdate((update) => {
    if (!update.ok) return failures.inc({}, 1);
    for (const event of update.events) {
      if (event.resource.startsWith(INTERNAL_PREFIX)) continue;
      if (
        event.type === 'acquired' ||
        event.type === 'handoff' ||
        event.type === 'released' ||
        event.type === 'expired'
      )
        transitions.inc({ type: event.type }, 1);
    }
  });
  const own = await prometheusMetrics({ registry: registry as never });
  return {
    handler: async (_request, response) => {
      const text = await registry.metrics();
      response.writeHead(200, { 'Content-Type': registry.contentType });
      response.end(text);
    },
    stop: () => {
      unsubscribe();
      own.stop();
    },
  };
}
