import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { NatsConnectionLike, NatsModules } from './nats-driver.js';
import { mapNatsError } from './nats-errors.js';
import type { NatsTarget } from './nats-url.js';

/**
 * How soon the client dials a lost server again: 250 ms (the driver's default is 2 s, longer than
 * a short lease's validity window), for ever. While it is away, writes are buffered by the driver
 * and sent on reconnect; each call has given up by its own deadline, and a write that lands late
 * is settled by reading the record back.
 */
const RECONNECT = Object.freeze({ reconnectTimeWait: 250, maxReconnectAttempts: -1 });

/** Opens a connection to what a URL names; a failure names the URL without its password. */
export async function connectNats(
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
