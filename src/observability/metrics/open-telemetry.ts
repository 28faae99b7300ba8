import { invalidArgument } from '../../core/errors.js';
import { loadPackage } from '../../core/load-driver.js';
import { checkKnownKeys, describe, optionKeys } from '../../core/options.js';
import { subscribeSink } from './metrics-sink.js';
import { HANDOVER_BUCKETS, METRICS, RENEW_BUCKETS } from './metric-names.js';
import { subscription, type MetricsSubscription } from './subscription.js';

/** How an instrument is described to OpenTelemetry. */
export interface OpenTelemetryInstrumentOptions {
  /** What the instrument measures. */
  description?: string;
  /** Its unit (UCUM: `s`, `{lease}`). */
  unit?: string;
  /** Hints for the SDK: the histogram bucket bounds. */
  advice?: {
    /** The histogram's bucket bounds, ascending. */
    explicitBucketBoundaries?: number[];
  };
}

/** The part of an `@opentelemetry/api` `Meter` leasehold uses (a `Meter` fits). */
export interface OpenTelemetryMeter {
  /** Makes a monotonic counter. */
  createCounter(
    name: string,
    options?: OpenTelemetryInstrumentOptions,
  ): {
    /** Adds `value` under `attributes`. */
    add(value: number, attributes?: Record<string, string>): void;
  };
  /** Makes a counter that can go down. */
  createUpDownCounter(
    name: string,
    options?: OpenTelemetryInstrumentOptions,
  ): {
    /** Adds `value` under `attributes`. */
    add(value: number, attributes?: Record<string, string>): void;
  };
  /**
   * Makes a gauge that records a value as it is now (`@opentelemetry/api` 1.9 and later); without
   * it, the fleet load gauges are left out.
   */
  createGauge?(
    name: string,
    options?: OpenTelemetryInstrumentOptions,
  ): {
    /** Records the value now under `attributes`. */
    record(value: number, attributes?: Record<string, string>): void;
  };
  /** Makes a histogram. */
  createHistogram(
    name: string,
    options?: OpenTelemetryInstrumentOptions,
  ): {
    /** Records one measurement under `attributes`. */
    record(value: number, attributes?: Record<string, string>): void;
  };
}

/** How `openTelemetryMetrics` records. */
export interface OpenTelemetryMetricsOptions {
  /** The meter to make the instruments with. @default `metrics.getMeter('leasehold')` of `@opentelemetry/api` */
  meter?: OpenTelemetryMeter;
}

interface OtelApi {
  metrics: { getMeter(name: string): OpenTelemetryMeter };
}

const KEYS = optionKeys<OpenTelemetryMetricsOptions>({ meter: true });

/**
 * Records what every `LeaseClient` and `LeaseManager` of the process does as OpenTelemetry
 * instruments (`leasehold.leases.held`, `leasehold.acquire.attempts`, …), by subscribing to the
 * diagnostics channels. Without `meter`, loads the optional peer `@opentelemetry/api`
 * (`DRIVER_MISSING` when it is not installed) and uses its global meter provider: a no-op
 * unless the application installed an OpenTelemetry SDK.
 */
export async function openTelemetryMetrics(
  options: OpenTelemetryMetricsOptions = {},
): Promise<MetricsSubscription> {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument(
      'openTelemetryMetrics options',
      `must be an object, got ${describe(options)}`,
    );
  checkKnownKeys('openTelemetryMetrics options', options, KEYS);
  let { meter } = options;
  if (meter !== undefined && typeof meter?.createHistogram !== 'function')
    throw invalidArgument('meter', 'must be an OpenTelemetry Meter');
  if (!meter) {
    const api = await loadPackage<OtelApi>('@opentelemetry/api', 'OpenTelemetry metrics need');
    meter = api.metrics.getMeter('leasehold');
  }
  const about = (metric: keyof typeof METRICS, unit: string, buckets?: readonly number[]) => ({
    description: METRICS[metric].help,
    unit,
    ...(buckets ? { advice: { explicitBucketBoundaries: [...buckets] } } : {}),
  });
  const name = (metric: keyof typeof METRICS): string => METRICS[metric].openTelemetry;
  const held = meter.createUpDownCounter(name('held'), about('held', '{lease}'));
  const attempts = meter.createCounter(name('attempts'), about('attempts', '{attempt}'));
  const renew = meter.createHistogram(name('renew'), about('renew', 's', RENEW_BUCKETS));
  const lost = meter.createCounter(name('lost'), about('lost', '{lease}'));
  const atRisk = meter.createCounter(name('atRisk'), about('atRisk', '{transition}'));
  const takeover = meter.createHistogram(
    name('takeover'),
    about('takeover', 's', HANDOVER_BUCKETS),
  );
  const handoff = meter.createHistogram(name('handoff'), about('handoff', 's', HANDOVER_BUCKETS));
  const storeErrors = meter.createCounter(name('storeErrors'), about('storeErrors', '{error}'));
  const fleetLoad = meter.createGauge?.(name('fleetLoad'), about('fleetLoad', '1'));
  const fleetFair = meter.createGauge?.(name('fleetFairLoad'), about('fleetFairLoad', '1'));
  return subscription(
    subscribeSink({
      held: (delta) => held.add(delta),
      attempt: (result) => attempts.add(1, { result }),
      renewed: (seconds) => renew.record(seconds),
      lost: (cause) => lost.add(1, { cause }),
      atRisk: () => atRisk.add(1),
      takeover: (seconds) => takeover.record(seconds),
      handoff: (seconds, reason) => handoff.record(seconds, { reason }),
      storeError: (code, operation) => storeErrors.add(1, { code, operation }),
      // A stopped manager's load is recorded as 0: a gauge here has no series to remove.
      fleetLoad: (group, owner, now) => {
        fleetLoad?.record(now?.load ?? 0, { group, owner });
        fleetFair?.record(now?.fair ?? 0, { group, owner });
      },
    }),
  );
}
