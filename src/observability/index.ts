export type { MetricsSubscription } from './metrics/subscription.js';
export {
  prometheusMetrics,
  type PrometheusMetricsOptions,
  type PrometheusRegistry,
} from './metrics/prometheus.js';
export {
  openTelemetryMetrics,
  type OpenTelemetryMetricsOptions,
  type OpenTelemetryMeter,
  type OpenTelemetryInstrumentOptions,
} from './metrics/open-telemetry.js';
