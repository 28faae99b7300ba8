import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { prometheusMetrics, type MetricsSubscription } from '../../src/observability/index.js';
import {
  clientRig,
  clientScenario,
  fleetScenario,
  type MetricKey,
  type MetricsView,
} from './scenarios.js';

const NAMES: Record<MetricKey, string> = {
  held: 'leasehold_leases_held',
  attempts: 'leasehold_acquire_attempts_total',
  renew: 'leasehold_renew_duration_seconds',
  lost: 'leasehold_leases_lost_total',
  atRisk: 'leasehold_at_risk_transitions_total',
  takeover: 'leasehold_takeover_duration_seconds',
  handoff: 'leasehold_handoff_duration_seconds',
  storeErrors: 'leasehold_store_errors_total',
  fleetLoad: 'leasehold_fleet_load',
  fleetFairLoad: 'leasehold_fleet_fair_load',
};

interface Sample {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

const sameLabels = (a: Record<string, unknown>, b: Record<string, unknown>): boolean =>
  JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());

/** Reads the registry back the way a scrape would, through prom-client's JSON view. */
async function view(registry: Registry, prefix = ''): Promise<MetricsView> {
  const all = await registry.getMetricsAsJSON();
  const samples = (metric: MetricKey): Sample[] => {
    const found = all.find((m) => m.name === prefix + NAMES[metric]);
    if (!found) throw new Error(`${prefix + NAMES[metric]} is not registered`);
    return found.values as Sample[];
  };
  const pick = (metric: MetricKey, suffix: string, labels: Record<string, string>): number => {
    const name = prefix + NAMES[metric] + suffix;
    const hit = samples(metric).find(
      (s) => (s.metricName ?? prefix + NAMES[metric]) === name && sameLabels(s.labels, labels),
    );
    return hit?.value ?? 0;
  };
  return {
    value: (metric, labels = {}) => pick(metric, '', labels),
    histogram: (metric, labels = {}) => ({
      count: pick(metric, '_count', labels),
      sum: pick(metric, '_sum', labels),
    }),
    labelSets: (metric) => samples(metric).map((s) => s.labels as Record<string, string>),
  };
}

let subscriptions: MetricsSubscription[] = [];
afterEach(() => {
  for (const s of subscriptions) s.stop();
  subscriptions = [];
});

async function start(options: Parameters<typeof prometheusMetrics>[0]) {
  const metrics = await prometheusMetrics(options);
  subscriptions.push(metrics);
  return metrics;
}

describe('prometheusMetrics', () => {
  it('counts acquires, renewals, at-risk, every cause of loss, releases and store errors of real leases', async () => {
    const registry = new Registry();
    await start({ registry });
    await clientScenario(() => view(registry));
    // The exposition text a scraper reads.
    const text = await registry.getSingleMetricAsString('leasehold_acquire_attempts_total');
    expect(text).toContain('# TYPE leasehold_acquire_attempts_total counter');
    expect(text).toContain('leasehold_acquire_attempts_total{result="acquired"} 5');
    expect(await registry.getSingleMetricAsString('leasehold_leases_lost_total')).toContain(
      'leasehold_leases_lost_total{cause="store-error"} 1',
    );
    expect(await registry.getSingleMetricAsString('leasehold_renew_duration_seconds')).toContain(
      'leasehold_renew_duration_seconds_bucket{le="0.01"} 4',
    );
  });

  it('counts a fleet’s handoffs and its takeover of a dead worker’s leases', async () => {
    const registry = new Registry();
    const metrics = await start({ registry });
    await fleetScenario(
      () => view(registry),
      () => metrics.stop(),
    );
  });

  it('puts the prefix before every name, and stop() unregisters the metrics and stops counting', async () => {
    const registry = new Registry();
    const metrics = await start({ registry, prefix: 'app_' });
    const names = (await registry.getMetricsAsJSON()).map((m) => m.name).sort();
    expect(names).toEqual(
      Object.values(NAMES)
        .map((n) => `app_${n}`)
        .sort(),
    );
    const { a, close } = clientRig();
    try {
      await a.tryAcquire('obs/prefixed');
      expect((await view(registry, 'app_')).value('held')).toBe(1);
      metrics.stop();
      metrics.stop(); // again: nothing
      expect(await registry.getMetricsAsJSON()).toEqual([]);
      // A new subscription starts from what it sees: the lease held before it is not counted.
      await start({ registry });
      await a.lease('obs/prefixed')!.release();
      const v = await view(registry);
      expect(v.value('held')).toBe(0);
      await a.tryAcquire('obs/after');
      expect((await view(registry)).value('held')).toBe(1);
    } finally {
      await close();
    }
  });

  it('refuses a registry that already has its metrics, and bad options, naming the field', async () => {
    const registry = new Registry();
    await start({ registry });
    await expect(prometheusMetrics({ registry })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('leasehold_leases_held'),
    });
    await expect(prometheusMetrics({ registry, prefix: 'bad-prefix' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('prefix'),
    });
    await expect(prometheusMetrics({ registry: {} as unknown as Registry })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('registry'),
    });
    await expect(
      prometheusMetrics({ registy: registry } as unknown as { registry: Registry }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('counts every client of the process, and uses prom-client’s global registry by default', async () => {
    const { register } = await import('prom-client');
    await start({});
    const { a, b, close } = clientRig();
    try {
      await a.tryAcquire('obs/x');
      await b.tryAcquire('obs/y');
      expect((await view(register)).value('attempts', { result: 'acquired' })).toBe(2);
      expect((await view(register)).value('held')).toBe(2);
    } finally {
      await close();
    }
  });
});
