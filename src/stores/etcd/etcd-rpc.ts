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
 * Every call this store makes, each with a deadline: a gRPC deadline that the server and the
 * client both honour, and a timer of our own around it for anything outside the call (connecting,
 * fetching an auth token). A paused server therefore gives `STORE_UNAVAILABLE`, never a hang.
 * A write whose deadline passed may still have been applied.
 */
export class EtcdRpc {
  constructor(
    private readonly client: EtcdClient,
    readonly timeoutMs: number,
  ) {}

  range(request: EtcdRangeRequest): Promise<EtcdRangeResponse> {
    return this.bounded('range', this.client.kv.range(request, this.options()));
  }

  txn(request: EtcdTxnRequest): Promise<EtcdTxnResponse> {
    return this.bounded('txn', this.client.kv.txn(request, this.options()));
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
