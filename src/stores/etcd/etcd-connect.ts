import type * as Cockatiel from 'cockatiel';
import { loadEtcd3, type EtcdClient, type Policy } from './etcd-driver.js';
import { isUnreachable } from './etcd-errors.js';
import { callOptionsFor } from './etcd-rpc.js';
import type { EtcdTarget } from './etcd-url.js';

/**
 * How soon gRPC dials an endpoint again after a connection attempt failed: 100 ms, growing to
 * 250 ms at most, ±20 % (gRPC's own defaults are 1 s, growing 1.6-fold up to 2 min). The wait
 * belongs to the endpoint's one connection, which every call of the process shares (etcd3 makes
 * a new channel after a failure, but gRPC hands it the same connection while another call still
 * holds it), so with the defaults a server that restarted in half a second stayed unused for a
 * second or more: longer than a short lease's validity window. A holder must renew before its
 * deadline (design rule 2); a server that is back is used within about a quarter second.
 *
 * And while calls are waiting, gRPC pings the server every 10 s and closes a connection that gave
 * no answer for 5 s: reads and transactions carry no gRPC deadline (see `EtcdRpc`), so a call on a
 * connection to a server that froze or vanished ends with that connection, not never. (etcd lets
 * a client ping every 5 s at most: `--grpc-keepalive-min-time`.)
 */
const GRPC_OPTIONS = Object.freeze({
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 250,
  'grpc.keepalive_time_ms': 10_000,
  'grpc.keepalive_timeout_ms': 5_000,
});

/** How long an endpoint that failed is passed over while others answer: doubling per failed trial. */
const COOLDOWN_MS = { first: 500, max: 16_000 };

/** How soon a broken watch stream is opened again: doubling per failure. */
const WATCH_RETRY_MS = { first: 100, max: 2000 };

/**
 * Makes an etcd3 client for a URL's endpoints. etcd3's default fault handling suits a client
 * that waits: it retries three times and shuns a server for five seconds after three failures
 * (even the only one). A lease store wants the opposite: its caller (the heartbeat) already
 * retries, and a server that is back must be used soon. So here, with cockatiel's policies
 * (the library etcd3 runs them with): a call that finds an endpoint unreachable is tried once
 * more on each other endpoint; an endpoint that failed is passed over (its circuit opens) only
 * while another endpoint's circuit is closed, for 0.5 s doubling with each failed trial up to
 * 16 s, and a lone endpoint never is; a broken watch stream reconnects within 100 ms to 2 s; and
 * gRPC dials a failed endpoint again within 250 ms (`GRPC_OPTIONS`). Retrying is safe for this
 * store's calls: a retried acquire recognises itself by its nonce, a renew is idempotent, and a
 * retried release answers `false` ("already gone"), as long as no copy lands after the call was
 * answered: a retry carries the call's deadline, and so does every attempt of a data write, whose
 * late copy would put an older value back (`callOptionsFor`).
 */
export async function connectEtcd(target: EtcdTarget): Promise<EtcdClient> {
  const [etcd3, cockatiel] = await loadEtcd3();
  const hosts = [...target.hosts];
  return new etcd3.Etcd3({
    hosts,
    auth: target.auth ? { ...target.auth } : undefined,
    grpcOptions: GRPC_OPTIONS,
    defaultCallOptions: callOptionsFor,
    faultHandling: {
      host: hostPolicies(cockatiel, hosts, etcd3.isRecoverableError),
      global:
        hosts.length < 2
          ? cockatiel.noop
          : cockatiel.retry(cockatiel.handleWhen(isUnreachable), { maxAttempts: hosts.length - 1 }),
      watchBackoff: doubling(cockatiel, WATCH_RETRY_MS),
    },
  });
}

/**
 * One circuit breaker per endpoint, for a cluster: a failure opens an endpoint's circuit only
 * while some other endpoint's is closed, so at least one is always tried. etcd3 moves on to the
 * next endpoint when a circuit is open, and sends a single trial call once its cooldown passed.
 */
function hostPolicies(
  cockatiel: typeof Cockatiel,
  hosts: readonly string[],
  isFailure: (error: Error) => boolean,
): (host: string) => Policy {
  if (hosts.length < 2) return () => cockatiel.noop;
  const circuits = new Map<string, Cockatiel.CircuitBreakerPolicy>();
  const othersClosed = (host: string): boolean =>
    [...circuits].some(
      ([other, circuit]) => other !== host && circuit.state === cockatiel.CircuitState.Closed,
    );
  for (const host of hosts) {
    const breaker: Cockatiel.IBreaker = {
      state: null,
      success: () => {},
      failure: () => othersClosed(host),
    };
    const halfOpenAfter = doubling(cockatiel, COOLDOWN_MS);
    circuits.set(
      host,
      cockatiel.circuitBreaker(cockatiel.handleWhen(isFailure), { breaker, halfOpenAfter }),
    );
  }
  return (host) => circuits.get(host) ?? cockatiel.noop;
}

/** Delays from `first` doubling up to `max`, without jitter. */
function doubling(
  cockatiel: typeof Cockatiel,
  ms: { first: number; max: number },
): Cockatiel.ExponentialBackoff<number> {
  return new cockatiel.ExponentialBackoff({
    initialDelay: ms.first,
    maxDelay: ms.max,
    exponent: 2,
    generator: cockatiel.noJitterGenerator,
  });
}
