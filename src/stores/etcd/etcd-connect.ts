import { loadDriver } from '../../core/load-driver.js';
import type { EtcdClient } from './etcd-client.js';
import { isUnreachable } from './etcd-errors.js';
import type { EtcdTarget } from './etcd-url.js';

/** What etcd3 runs each call through (a cockatiel policy, typed by the one method etcd3 calls). */
interface Policy {
  execute<T>(fn: (context: { signal: AbortSignal; attempt: number }) => Promise<T> | T): Promise<T>;
}

/** A watch reconnection delay (a cockatiel backoff, by the members etcd3 reads). */
interface Backoff {
  readonly duration: number;
  next(): Backoff;
}

/** The part of the `etcd3` module this store uses. */
interface Etcd3Module {
  Etcd3: new (options: {
    hosts: string[];
    auth?: { username: string; password: string };
    faultHandling?: {
      host?: (host: string) => Policy;
      global?: Policy;
      watchBackoff?: { next(): Backoff };
    };
  }) => EtcdClient;
  isRecoverableError(error: Error): boolean;
}

/** How long an endpoint that failed is passed over while others are healthy: doubling per failure. */
const COOLDOWN_MS = { first: 500, max: 16_000 };

/**
 * Makes an etcd3 client for a URL's endpoints. etcd3's default fault handling suits a client
 * that waits: it retries three times and shuns a server for five seconds after three failures
 * (even the only one). A lease store wants the opposite: its caller (the heartbeat) already
 * retries, and a server that is back must be used soon. So here: a call that finds an
 * endpoint unreachable is tried once more on each other endpoint, an endpoint that failed is
 * passed over while another is healthy (0.5 s, doubling with each failure in a row, up to 16 s;
 * never when it is the only one), and a broken watch stream reconnects within 100 ms to 2 s. Retrying is safe for this store's calls: a retried acquire recognises itself
 * by its nonce, a renew is idempotent, and a retried release answers `false` ("already gone").
 */
export async function connectEtcd(target: EtcdTarget): Promise<EtcdClient> {
  const etcd3 = await loadDriver<Etcd3Module>('etcd3', 'etcd');
  const health = new EndpointHealth(target.hosts.length, etcd3.isRecoverableError);
  return new etcd3.Etcd3({
    hosts: [...target.hosts],
    auth: target.auth ? { ...target.auth } : undefined,
    faultHandling: {
      host: (host) => health.policy(host),
      global: retryUnreachable(target.hosts.length),
      watchBackoff: { next: () => backoff(100) },
    },
  });
}

function backoff(ms: number): Backoff {
  return { duration: ms, next: () => backoff(Math.min(ms * 2, 2000)) };
}

function retryUnreachable(endpoints: number): Policy {
  const signal = new AbortController().signal;
  return {
    async execute(fn) {
      for (let attempt = 1; ; attempt++) {
        try {
          return await fn({ signal, attempt });
        } catch (error) {
          if (attempt >= endpoints || !isUnreachable(error)) throw error;
        }
      }
    },
  };
}

/** Which endpoints failed recently; shared by the per-endpoint policies. */
class EndpointHealth {
  private readonly failedUntil = new Map<string, number>();
  private readonly failures = new Map<string, number>();

  constructor(
    private readonly endpoints: number,
    private readonly isFailure: (error: Error) => boolean,
  ) {}

  policy(host: string): Policy {
    const signal = new AbortController().signal;
    return {
      execute: async (fn) => {
        if (this.shunned(host)) throw new PassedOver(host);
        try {
          const result = await fn({ signal, attempt: 1 });
          this.failedUntil.delete(host);
          this.failures.delete(host);
          return result;
        } catch (error) {
          if (error instanceof Error && this.isFailure(error)) {
            const failures = (this.failures.get(host) ?? 0) + 1;
            this.failures.set(host, failures);
            const cooldown = Math.min(COOLDOWN_MS.first * 2 ** (failures - 1), COOLDOWN_MS.max);
            this.failedUntil.set(host, Date.now() + cooldown);
          }
          throw error;
        }
      },
    };
  }

  /** Passed over only while it failed recently and some other endpoint did not. */
  private shunned(host: string): boolean {
    if (this.endpoints < 2 || (this.failedUntil.get(host) ?? 0) <= Date.now()) return false;
    const now = Date.now();
    return [...this.failedUntil.values()].filter((until) => until > now).length < this.endpoints;
  }
}

/** etcd3 moves on to the next endpoint when a policy refuses with a broken-circuit error. */
class PassedOver extends Error {
  readonly isBrokenCircuitError = true;
  constructor(host: string) {
    super(`etcd endpoint ${host} failed moments ago; trying another`);
  }
}
