/**
 * Distributed leases with fencing tokens on the store you already run: clients, fleets, stores,
 * fences and metrics. The guide is in the repository's `docs/` folder.
 * @module leasehold
 */
export { ErrorCode, LeaseError, isLeaseError, type LeaseErrorOptions } from './core/errors.js';
export type { Lease, LeaseRecord, LeaseRef } from './core/lease.js';
export type { LeaseData } from './core/lease-data.js';
export { LIMITS, type ListOptions } from './core/options.js';
export { PERMIT_MARK, parsePermit, permitResource } from './core/permits.js';
export type {
  AcquireOutcome,
  LeaseStore,
  StoreCapabilities,
  WatchEvent,
  WatchListener,
} from './core/store.js';
export { StoreBase } from './core/store.js';
export { warnWatchError, type Unwatch, type WatchErrorHandler } from './core/watch-hub.js';
export {
  diagnoseStore,
  FindingLevel,
  type DiagnoseOptions,
  type Diagnosis,
  type Finding,
} from './core/doctor.js';
export { systemClock, driftMs, type Clock, type TimerHandle } from './core/time.js';
export { DEFAULT_STORE_URL } from './core/store-url.js';
export { openStore, knownSchemes, type OpenStoreOptions } from './stores/open-store.js';
export { MemoryStore, type MemoryStoreOptions } from './stores/memory/index.js';
export {
  SqliteStore,
  type SqliteStoreOptions,
  type SqliteDatabase,
} from './stores/sqlite/index.js';
export { PostgresStore, type PostgresStoreOptions, type PgPool } from './stores/postgres/index.js';
export {
  MysqlStore,
  type MysqlStoreOptions,
  type MysqlConnectionOptions,
  type MysqlPool,
} from './stores/mysql/index.js';
export {
  DynamodbStore,
  type DynamodbStoreOptions,
  type DynamodbConnectOptions,
  type DynamodbClient,
  type DynamodbSdkOption,
} from './stores/dynamodb/index.js';
export { EtcdStore, type EtcdStoreOptions, type EtcdClient } from './stores/etcd/index.js';
export type { EtcdUnwatch } from './stores/etcd/etcd-watch.js';
export {
  RedisStore,
  type RedisStoreOptions,
  type RedisClient,
  type RedisSubscriber,
} from './stores/redis/index.js';
export {
  NatsStore,
  type NatsStoreOptions,
  type NatsConnectionLike,
  type NatsKv,
  type NatsKvEntry,
} from './stores/nats/index.js';
export type { NatsUnwatch } from './stores/nats/nats-watch.js';
export { ZookeeperStore, type ZookeeperStoreOptions } from './stores/zookeeper/index.js';
export type { ZookeeperUnwatch } from './stores/zookeeper/zookeeper-watch.js';
export {
  S3Store,
  type S3StoreOptions,
  type S3ConnectOptions,
  type S3Client,
  type S3SdkOption,
} from './stores/s3/index.js';
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
} from './core/channels.js';
export type { LeaseholdLogger } from './core/logger.js';
export {
  prometheusMetrics,
  openTelemetryMetrics,
  type MetricsSubscription,
  type PrometheusMetricsOptions,
  type PrometheusRegistry,
  type OpenTelemetryMetricsOptions,
  type OpenTelemetryMeter,
  type OpenTelemetryInstrumentOptions,
} from './observability/index.js';
export { LeaseClient, type LeaseClientEvents } from './client/lease-client.js';
export type { HeldOutcome } from './client/attempts.js';
export type {
  LeaseClientOptions,
  AcquireOptions,
  AcquireAllOptions,
  TryAcquireOptions,
} from './client/client-options.js';
export { HeldGroup } from './client/held-group.js';
export {
  HeldLease,
  type LeaseState,
  type HeldLeaseEvents,
  type DataOptions,
} from './client/held-lease.js';
export { LeaseManager, type LeaseManagerEvents, type StopOptions } from './fleet/lease-manager.js';
export type { LeaseManagerOptions, WantedResources } from './fleet/manager-options.js';
export type { ResourceWeights } from './fleet/load-book.js';
export {
  BucketManager,
  bucketOf,
  MAX_BUCKETS,
  type BucketManagerOptions,
  type HeldBucket,
} from './fleet/bucket-manager.js';
export { elect, type Election } from './fleet/election.js';
export type { ElectOptions, DemotedReason } from './fleet/election-options.js';
export type { LeaderInfo } from './fleet/election-record.js';
export {
  observeLeader,
  type LeaderObserver,
  type ObserveLeaderOptions,
} from './fleet/election-observer.js';
export {
  FenceGuard,
  SqliteFence,
  PostgresFence,
  FENCE_DEFAULTS,
  type FencedLease,
  type FenceOptions,
  type FenceResult,
  type SqliteFenceDatabase,
  type SqliteFenceStatement,
  type PgFenceClient,
  type PgFencePool,
  type PgFenceQueryResult,
} from './fence/index.js';
