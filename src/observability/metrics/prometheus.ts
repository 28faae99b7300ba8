import { invalidArgument } from '../../core/errors.js';
import { loadPackage } from '../../core/load-driver.js';
import { checkKnownKeys, describe, optionKeys } from '../../core/options.js';
import { subscribeSink } from './metrics-sink.js';
import { HANDOVER_BUCKETS, METRICS, RENEW_BUCKETS } from './metric-names.js';
import { subscription, type MetricsSubscription } from './subscription.js';

/** The part of a prom-client `Registry` leasehold uses (a `Registry` fits). */
export interface PrometheusRegistry {
  /** Finds a registered metric by name. */
  getSingleMetric(name: string): unknown;
  /** Removes a registered metric by name. */
  removeSingleMetric(name: string): void;
}

/** How `prometheusMetrics` registers its metrics. */
export interface PrometheusMetricsOptions {
  /** The registry to register the metrics in. @default prom-client's global `register` */
  registry?: PrometheusRegistry;
  /** Put before every metric name: `myapp_` gives `myapp_leasehold_leases_held`. @default '' */
  prefix?: string;
}

type Labels = Record<string, string>;
interface MetricConfig {
  name: string;
  help: string;
  labelNames?: string[];
  buckets?: number[];
  registers: PrometheusRegistry[];
}
/** The part of prom-client leasehold uses. */
interface PromClient {
  register: PrometheusRegistry;
  Counter: new (config: MetricConfig) => { inc(labels?: Labels): void };
  Gauge: new (config: MetricConfig) => {
    inc(): void;
    dec(): void;
    set(labels: Labels, value: number): void;
    remove(labels: Labels): void;
  };
  Histogram: new (config: MetricConfig) => {
    observe(value: number): void;
    observe(labels: Labels, value: number): void;
  };
}

const KEYS = optionKeys<PrometheusMetricsOptions>({ registry: true, prefix: true });

/**
 * Counts what every `LeaseClient` and `LeaseManager` of the process does in prom-client metrics
 * (`leasehold_leases_held`, `leasehold_acquire_attempts_total{result}`, …), by subscribing to the
 * diagnostics channels. Loads the optional peer `prom-client` (`DRIVER_MISSING` when it is not
 * installed). Throws `INVALID_ARGUMENT` when the registry already has these metrics (another
 * subscription that was not stopped).
 */
export async function prometheusMetrics(
  options: PrometheusMetricsOptions = {},
): Promise<MetricsSubscription> {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument(
      'prometheusMetrics options',
      `must be an object, got ${describe(options)}`,
    );
  checkKnownKeys('prometheusMetrics options', options, KEYS);
  const prefix = options.prefix ?? '';
  if (typeof prefix !== 'string' || !/^(?:[a-zA-Z_:][a-zA-Z0-9_:]*)?$/.test(prefix))
    throw invalidArgument(
      'prefix',
      `must be a Prometheus name prefix (letters, digits, "_", ":"), got ${describe(prefix)}`,
    );
  const { registry } = options;
  if (
    registry !== undefined &&
    (typeof registry?.getSingleMetric !== 'function' ||
      typeof registry.removeSingleMetric !== 'function')
  )
    throw invalidArgument('registry', 'must be a prom-client Registry');
  const prom = await loadPackage<PromClient>('prom-client', 'Prometheus metrics need');
  const registers = [registry ?? prom.register];
  const name = (metric: keyof typeof METRICS): string => prefix + METRICS[metric].prometheus;
  const taken = Object.keys(METRICS)
    .map((metric) => name(metric as keyof typeof METRICS))
    .filter((n) => registers[0]!.getSingleMetric(n) !== undefined);
  if (taken.length > 0)
    throw invalidArgument(
      'registry',
      `already has ${taken.join(', ')}: stop the other subscription first, or give another prefix`,
    );
  const config = (
    metric: keyof typeof METRICS,
    more: Partial<MetricConfig> = {},
  ): MetricConfig => ({
    name: name(metric),
    help: METRICS[metric].help,
    registers,
    ...more,
  });
  const held = new prom.Gauge(config('held'));
  const attempts = new prom.Counter(config('attempts', { labelNames: ['result'] }));
  const renew = new prom.Histogram(config('renew', { buckets: [...RENEW_BUCKETS] }));
  const lost = new prom.Counter(config('lost', { labelNames: ['cause'] }));
  const atRisk = new prom.Counter(config('atRisk'));
  const takeover = new prom.Histogram(config('takeover', { buckets: [...HANDOVER_BUCKETS] }));
  const handoff = new prom.Histogram(
    config('handoff', { labelNames: ['reason'], buckets: [...HANDOVER_BUCKETS] }),
  );
  const storeErrors = new prom.Counter(
    config('storeErrors', { labelNames: ['code', 'operation'] }),
  );
  const fleetLoad = new prom.Gauge(config('fleetLoad', { labelNames: ['group', 'owner'] }));
  const fleetFair = new prom.Gauge(config('fleetFairLoad', { labelNames: ['group', 'owner'] }));
  const unsubscribe = subscribeSink({
    held: (delta) => (delta > 0 ? held.inc() : held.dec()),
    attempt: (result) => attempts.inc({ result }),
    renewed: (seconds) => renew.observe(seconds),
    lost: (cause) => lost.inc({ cause }),
    atRisk: () => atRisk.inc(),
    takeover: (seconds) => takeover.observe(seconds),
    handoff: (seconds, reason) => handoff.observe({ reason }, seconds),
    storeError: (code, operation) => storeErrors.inc({ code, operation }),
    fleetLoad: (group, owner, now) => {
      if (now === undefined) {
        fleetLoad.remove({ group, owner });
        fleetFair.remove({ group, owner });
        return;
      }
      fleetLoad.set({ group, owner }, now.load);
      fleetFair.set({ group, owner }, now.fair);
    },
  });
  return subscription(() => {
    unsubscribe();
    for (const metric of Object.keys(METRICS))
      registers[0]!.removeSingleMetric(name(metric as keyof typeof METRICS));
  });
}
