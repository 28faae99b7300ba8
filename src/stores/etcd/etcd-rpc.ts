import { CallDeadlines } from '../../core/call-deadlines.js';
import { noAnswer, withDeadline } from '../../core/deadline.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import { isUnreachable } from './etcd-errors.js';
import type {
  EtcdCallOptions,
  EtcdClient,
  EtcdLeaseGrantResponse,
  EtcdRangeRequest,
  EtcdRangeResponse,
  EtcdTxnRequest,
  EtcdTxnResponse,
} from './etcd-driver.js';

/**
 * Every call this store makes, each with a deadline, so a paused server gives `STORE_UNAVAILABLE`,
 * never a hang. Reads and transactions (the hot path) are bounded by one timer of this store for
 * all of them (`CallDeadlines`) and carry no gRPC deadline: a gRPC deadline costs every call a
 * timer in grpc-js and a `grpc-timeout` header that etcd turns into a timer of its own, about
 * 30 µs of a ~1 ms acquire-release cycle (measured), and protects nothing a lease needs: a call
 * that outlived its deadline may be applied either way (a holder's deadline counts from before
 * its request; a grant that lands late is on an owner lease that is no longer kept alive). A call
 * left waiting on a connection that died ends when gRPC's keep-alive closes that connection
 * (`GRPC_OPTIONS` in etcd-connect.ts). Lease grants and keep-alives, which are few, still carry a
 * gRPC deadline as well as a timer of their own. A write whose deadline passed may still have been
 * applied.
 */
/** Transactions every attempt of which carries a gRPC deadline: those that write lease data. */
const ORDERED = new WeakSet<object>();
/** The deadline of each call in flight and its attempts so far, by request (see `callOptionsFor`). */
const ATTEMPTS = new WeakMap<object, { at: number; tries: number }>();

/**
 * Marks `txn` as a data write, every attempt of which carries a gRPC deadline, so the client sends
 * no copy of it after the store answered it as failed. What keeps a late copy from putting an
 * older value back is the write's own compare on the data key's revision (see `DataRevisions`):
 * a copy can still be held up inside the cluster, where no deadline reaches it.
 */
export function ordered<T extends object>(txn: T): T {
  ORDERED.add(txn);
  return txn;
}

/** Whether `txn` was marked with `ordered`. */
export function isOrdered(txn: object): boolean {
  return ORDERED.has(txn);
}

/**
 * etcd3's call options for each attempt of a call (`defaultCallOptions`; etcd3 hands every
 * attempt of one call the same request object). The first attempt of most calls carries no gRPC
 * deadline (see `EtcdRpc`). A retry carries the call's own deadline, and so does every attempt of
 * a data write: etcd3 retries a call that found its endpoint unreachable on the next endpoint,
 * and without a deadline such a copy could still be sent after this store had answered the call
 * as failed and its caller had written again; with one, gRPC drops it at the deadline instead.
 */
export function callOptionsFor(context: { params?: unknown }): EtcdCallOptions {
  const request = context.params;
  if (typeof request !== 'object' || request === null) return {};
  const attempt = ATTEMPTS.get(request);
  if (!attempt) return {};
  attempt.tries++;
  return attempt.tries > 1 || ORDERED.has(request) ? { deadline: attempt.at } : {};
}

export class EtcdRpc {
  private readonly deadlines: CallDeadlines;

  constructor(
    private readonly client: EtcdClient,
    readonly timeoutMs: number,
  ) {
    this.deadlines = new CallDeadlines(timeoutMs, (operation) =>
      noAnswer(`etcd ${operation}`, timeoutMs),
    );
  }

  range(request: EtcdRangeRequest): Promise<EtcdRangeResponse> {
    ATTEMPTS.set(request, { at: Date.now() + this.timeoutMs, tries: 0 });
    return this.deadlines.bound('range', (resolve, reject) => {
      this.client.kv.range(request).then(resolve, reject);
    });
  }

  txn(request: EtcdTxnRequest): Promise<EtcdTxnResponse> {
    ATTEMPTS.set(request, { at: Date.now() + this.timeoutMs, tries: 0 });
    return this.deadlines.bound('txn', (resolve, reject) => {
      this.client.kv.txn(request).then(resolve, reject);
    });
  }

  async grant(ttlSeconds: number): Promise<EtcdLeaseGrantResponse> {
    const response = await this.bounded(
      'lease grant',
      this.client.leaseClient.leaseGrant({ TTL: ttlSeconds }, this.options()),
    );
    if (response.error) {
      throw new LeaseError(ErrorCode.STORE_UNAVAILABLE, `etcd lease grant: ${response.error}`);
    }
    // etcd never grants lease 0 ("no lease"): a hold key on it would read as released.
    if (String(response.ID) === '0') {
      throw new LeaseError(ErrorCode.STORE_UNAVAILABLE, 'etcd lease grant: answered lease 0');
    }
    return response;
  }

  /**
   * One keep-alive of lease `id`; resolves to the seconds it now has left, 0 when it is gone.
   * A stream refused by an unreachable endpoint is opened again (the driver picks another
   * endpoint), up to three times in all: the driver retries only unary calls by itself.
   */
  keepAlive(id: string): Promise<number> {
    const options = this.options();
    const attempt = async (left: number): Promise<number> => {
      try {
        return await this.keepAliveOnce(id, options);
      } catch (error) {
        if (left <= 1 || !isUnreachable(error)) throw error;
        return attempt(left - 1);
      }
    };
    return this.bounded('lease keep-alive', attempt(3));
  }

  private async keepAliveOnce(id: string, options: EtcdCallOptions): Promise<number> {
    const stream = await this.client.leaseClient.leaseKeepAlive(options);
    return new Promise<number>((resolve, reject) => {
      stream.on('error', reject);
      stream.on('data', (response) => {
        resolve(Number(response.TTL) || 0);
        stream.end();
      });
      stream.write({ ID: id });
    });
  }

  private options(): { deadline: number } {
    return { deadline: Date.now() + this.timeoutMs };
  }

  private bounded<T>(what: string, call: Promise<T>): Promise<T> {
    // The driver's deadline normally fires first; ours adds a little so its error is the one seen.
    const ms = this.timeoutMs + 250;
    return withDeadline(call, ms, () => noAnswer(`etcd ${what}`, ms));
  }
}
