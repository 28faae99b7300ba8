import { metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  DataPointType,
  MeterProvider,
  MetricReader,
  type DataPoint,
  type Histogram,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it } from 'vitest';
import { openTelemetryMetrics, type MetricsSubscription } from '../../src/observability/index.js';
import {
  clientRig,
  clientScenario,
  fleetScenario,
  type MetricKey,
  type MetricsView,
} from './scenarios.js';

const NAMES: Record<MetricKey, string> = {
  held: 'leasehold.leases.held',
  attempts: 'leasehold.acquire.attempts',
  renew: 'leasehold.renew.duration',
  lost: 'leasehold.leases.lost',
  atRisk: 'leasehold.at_risk.transitions',
  takeover: 'leasehold.takeover.duration',
  handoff: 'leasehold.handoff.duration',
  storeErrors: 'leasehold.store.errors',
  fleetLoad: 'leasehold.fleet.load',
  fleetFairLoad: 'leasehold.fleet.fair_load',
};

/** A reader the test collects from on demand, as a pull exporter would. */
class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

const sameAttributes = (a: Record<string, unknown>, b: Record<string, unknown>): boolean =>
  JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());

async function collect(reader: TestReader): Promise<MetricData[]> {
  const { resourceMetrics, errors } = await reader.collect();
  expect(errors).toEqual([]);
  return resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics);
}

async function view(reader: TestReader): Promise<MetricsView> {
  const all = await collect(reader);
  const points = (metric: MetricKey): DataPoint<unknown>[] =>
    (all.find((m) => m.descriptor.name === NAMES[metric])?.dataPoints ??
      []) as DataPoint<unknown>[];
  const point = (metric: MetricKey, labels: Record<string, string>) =>
    points(metric).find((p) => sameAttributes(p.attributes, labels));
  return {
    value: (metric, labels = {}) => (point(metric, labels)?.value as number | undefined) ?? 0,
    histogram: (metric, labels = {}) => {
      const value = point(metric, labels)?.value as Histogram | undefined;
      return { count: value?.count ?? 0, sum: value?.sum ?? 0 };
    },
    labelSets: (metric) => points(metric).map((p) => p.attributes as Record<string, string>),
  };
}

let subscriptions: MetricsSubscription[] = [];
afterEach(() => {
  for (const s of subscriptions) s.stop();
  subscriptions = [];
  metrics.disable();
});

function sdk() {
  const reader = new TestReader();
  const provider = new MeterProvider({ readers: [reader] });
  return { reader, provider, meter: provider.getMeter('test') };
}

describe('openTelemetryMetrics', () => {
  it('counts acquires, renewals, at-risk, every cause of loss, releases and store errors of real leases', async () => {
    const { reader, meter } = sdk();
    subscriptions.push(await openTelemetryMetrics({ meter }));
    await clientScenario(() => view(reader));
  });

  it('counts a fleet’s handoffs and its takeover of a dead worker’s leases', async () => {
    const { reader, meter } = sdk();
    const subscription = await openTelemetryMetrics({ meter });
    subscriptions.push(subscription);
    await fleetScenario(
      () => view(reader),
      () => subscription.stop(),
    );
  });

  it('names, units, kinds and bucket bounds follow OpenTelemetry conventions', async () => {
    const { reader, meter } = sdk();
    subscriptions.push(await openTelemetryMetrics({ meter }));
    const { a, close } = clientRig();
    try {
      await a.tryAcquire('obs/named');
    } finally {
      await close();
    }
    const all = await collect(reader);
    const byName = new Map(all.map((m) => [m.descriptor.name, m]));
    // Instruments with no recording yet are not exported; these ones were recorded.
    expect(byName.get(NAMES.held)!.descriptor.unit).toBe('{lease}');
    expect(byName.get(NAMES.held)!.dataPointType).toBe(DataPointType.SUM);
    expect(byName.get(NAMES.held)).toMatchObject({ isMonotonic: false });
    expect(byName.get(NAMES.attempts)).toMatchObject({ isMonotonic: true });
    expect(byName.get(NAMES.attempts)!.aggregationTemporality).toBe(
      AggregationTemporality.CUMULATIVE,
    );
    expect(byName.get(NAMES.renew)).toBeUndefined();
    for (const name of byName.keys()) expect(Object.values(NAMES)).toContain(name);
  });

  it('records renewal latency in seconds, in the bucket bounds it advises', async () => {
    const { reader, meter } = sdk();
    subscriptions.push(await openTelemetryMetrics({ meter }));
    const { a, clock, close } = clientRig();
    try {
      await a.tryAcquire('obs/renewed');
      await clock.advance(300);
    } finally {
      await close();
    }
    const renew = (await collect(reader)).find((m) => m.descriptor.name === NAMES.renew)!;
    expect(renew.descriptor.unit).toBe('s');
    expect(renew.dataPointType).toBe(DataPointType.HISTOGRAM);
    const value = renew.dataPoints[0]!.value as Histogram;
    expect(value.count).toBe(1);
    expect(value.sum).toBeCloseTo(0.01, 9);
    expect(value.buckets.boundaries).toEqual([
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]);
  });

  it('uses the global meter of @opentelemetry/api: a no-op until an SDK is installed', async () => {
    // No SDK: recording goes nowhere, and nothing fails.
    subscriptions.push(await openTelemetryMetrics());
    const { a, close } = clientRig();
    try {
      await a.tryAcquire('obs/noop');
      subscriptions.pop()!.stop();
      // With a global provider installed, the default meter records.
      const { reader, provider } = sdk();
      expect(metrics.setGlobalMeterProvider(provider)).toBe(true);
      subscriptions.push(await openTelemetryMetrics());
      await a.tryAcquire('obs/global');
      const v = await view(reader);
      expect(v.value('attempts', { result: 'acquired' })).toBe(1);
      expect(v.value('held')).toBe(1);
      const scopes = (await reader.collect()).resourceMetrics.scopeMetrics;
      expect(scopes.map((s) => s.scope.name)).toEqual(['leasehold']);
    } finally {
      await close();
    }
  });

  it('refuses bad options, naming the field', async () => {
    await expect(openTelemetryMetrics({ meter: {} as never })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('meter'),
    });
    await expect(openTelemetryMetrics({ metre: 1 } as never)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});
