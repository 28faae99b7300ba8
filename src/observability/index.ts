export {
  LeaseholdChannel,
  type LeaseholdChannelName,
  type LeaseLossCause,
  type AcquireResult,
  type StoreOperation,
  type LeaseMessage,
  type LeaseAcquiredMessage,
  type LeaseRenewedMessage,
  type LeaseAtRiskMessage,
  type LeaseLostMessage,
  type LeaseReleasedMessage,
  type AcquireAttemptMessage,
  type StoreErrorMessage,
  type FleetHandoffMessage,
  type FleetTakeoverMessage,
  type FleetLoadMessage,
  type StoreFindingMessage,
} from '../core/channels.js';
export type { LeaseholdLogger } from '../core/logger.js';
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
