import { withDeadline } from '../../core/deadline.js';
import { ErrorCode, invalidArgument, LeaseError } from '../../core/errors.js';
import { stripUndefined } from '../../core/options.js';
import { openBucket } from './nats-bucket.js';
import { loadNats, type NatsConnectionLike, type NatsKv, type NatsModules } from './nats-driver.js';
import { mapNatsError, noAnswer } from './nats-errors.js';
import { editPrefix } from './nats-ops.js';
import {
  resolveNatsOptions,
  type NatsStoreOptions,
  type ResolvedNatsOptions,
} from './nats-options.js';
import { NatsPublisher } from './nats-publish.js';
import type { NatsTarget } from './nats-url.js';

/**
 * How soon the client dials a lost server again: 250 ms (the driver's default is 2 s, longer than
 * a short lease's validity window), for ever. While it is away, writes are buffered by the driver
 * and sent on reconnect; each call has given up by its own deadline, and a write that lands late
 * is settled by reading the record back.
 */
const RECONNECT = Object.freeze({ reconnectTimeWait: 250, maxReconnectAttempts: -1 });

/** What a store is started with: its connection, its bucket opened and checked, its options. */
export interface NatsSetup {
  readonly nc: NatsConnectionLike;
  readonly kv: NatsKv;
  /** Sends the conditional writes on the connection (see nats-publish.ts). */
  readonly publisher: NatsPublisher;
  readonly options: ResolvedNatsOptions;
  /** Whether the store made the connection, and so closes it on `close()`. */
  readonly ownsConnection: boolean;
}

/** A `NatsConnection` the caller made: it stays theirs. */
export async function withConnection(
  nc: NatsConnectionLike,
  options: NatsStoreOptions,
): Promise<NatsSetup> {
  if (typeof (nc as Partial<NatsConnectionLike> | null)?.isClosed !== 'function')
    throw invalidArgument('target', 'must be a nats:// URL or a NatsConnection');
  const resolved = resolveNatsOptions(options);
  return attach(resolved.modules ?? (await loadNats()), nc, resolved, false);
}

/**
 * A connection made to what a parsed URL names; `options` override the URL's parameters. The
 * connection is closed again when the bucket cannot be opened.
 */
export async function fromUrl(target: NatsTarget, options: NatsStoreOptions): Promise<NatsSetup> {
  const resolved = resolveNatsOptions({
    ...stripUndefined(target.store),
    ...stripUndefined(options),
  });
  const loaded = resolved.modules ?? (await loadNats());
  const nc = await connectNats(loaded, target, resolved.timeoutMs);
  try {
    return await attach(loaded, nc, resolved, true);
  } catch (error) {
    await nc.close().catch(() => {});
    throw error;
  }
}

/** Opens a connection to what a URL names; a failure names the URL without its password. */
async function connectNats(
  modules: NatsModules,
  target: NatsTarget,
  timeoutMs: number,
): Promise<NatsConnectionLike> {
  try {
    return await modules.transport.connect({
      servers: [...target.servers],
      ...target.auth,
      name: 'leasehold',
      timeout: timeoutMs,
      ...RECONNECT,
    });
  } catch (error) {
    const mapped = mapNatsError(error, 'connect', target.store.bucket ?? 'leasehold');
    const detail = error instanceof Error ? error.message : String(error);
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `cannot reach NATS at ${target.redacted}: ${detail}`,
      { cause: error, retryable: mapped.retryable },
    );
  }
}

/** Opens and checks the bucket on `nc` (see `openBucket`) within `timeoutMs`. */
async function attach(
  modules: NatsModules,
  nc: NatsConnectionLike,
  options: ResolvedNatsOptions,
  owns: boolean,
): Promise<NatsSetup> {
  const js = modules.jetstream.jetstream(nc, { timeout: options.timeoutMs });
  const kvm = new modules.kv.Kvm(js);
  const ms = options.timeoutMs;
  let kv: NatsKv;
  try {
    kv = await withDeadline(
      openBucket(kvm, options.bucket, options.createBucket, options.replicas),
      ms,
      () => noAnswer('open', options.bucket, ms),
    );
  } catch (error) {
    throw mapNatsError(error, 'open', options.bucket);
  }
  const publisher = new NatsPublisher(nc, modules.transport, editPrefix(kv), options.timeoutMs);
  return { nc, kv, publisher, options, ownsConnection: owns };
}
