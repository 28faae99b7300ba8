import { ErrorCode, LeaseError } from '../../core/errors.js';
import { opsNeeded } from './etcd-batch.js';
import type { EtcdTxnRequest, EtcdTxnResponse } from './etcd-driver.js';
import { refusedAsAWhole } from './etcd-errors.js';
import type { EtcdRpc } from './etcd-rpc.js';

/** One single-lease transaction waiting for its turn. */
interface Waiting {
  readonly resource: string;
  readonly txn: EtcdTxnRequest;
  readonly resolve: (answer: EtcdTxnResponse) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit for single-lease transactions (an acquire, a renewal or a release of one lease).
 * While one of them is on the wire, those asked meanwhile wait for the next turn of the event loop
 * (callers answered by one read of the socket ask again in the same turn) and then go together:
 * one outer transaction without compares, one nested transaction each, exactly as each would be
 * sent alone. A store with none on the wire sends at once, so a lone caller pays nothing.
 *
 * Each part's outcome is what it would be alone. etcd evaluates every nested compare against the
 * keys as they were before the outer transaction, and one resource's transaction reads and writes
 * only that resource's keys, so a group holds each resource at most once: the k-th transition of
 * a resource asked in one turn goes in the k-th group, sent after the groups before it on the same
 * connection. A group holds as many parts as `maxTxnOps` allows (see `opsNeeded`). A refusal of
 * the whole that one part may have caused (a lapsed etcd lease, too many operations or bytes)
 * sends each part once more alone; any other failure is each part's own, as it would have been.
 */
export class Coalescer {
  private queue: Waiting[] = [];
  private scheduled = false;
  private onWire = 0;
  private readonly landed = (): void => {
    this.onWire--;
  };

  constructor(
    private readonly rpc: EtcdRpc,
    private readonly maxTxnOps: number,
  ) {}

  /** The answer to `txn`, a transaction on `resource`'s keys alone. */
  send(resource: string, txn: EtcdTxnRequest): Promise<EtcdTxnResponse> {
    if (this.onWire === 0 && !this.scheduled) return this.alone(txn);
    return new Promise<EtcdTxnResponse>((resolve, reject) => {
      this.queue.push({ resource, txn, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => this.flush());
    });
  }

  private alone(txn: EtcdTxnRequest): Promise<EtcdTxnResponse> {
    this.onWire++;
    const sent = this.rpc.txn(txn);
    sent.then(this.landed, this.landed);
    return sent;
  }

  private flush(): void {
    this.scheduled = false;
    const queue = this.queue;
    this.queue = [];
    const seen = new Map<string, number>();
    const rounds: Waiting[][] = [];
    for (const waiting of queue) {
      const round = seen.get(waiting.resource) ?? 0;
      seen.set(waiting.resource, round + 1);
      (rounds[round] ??= []).push(waiting);
    }
    for (const round of rounds) {
      let group: Waiting[] = [];
      let most = 0;
      for (const waiting of round) {
        const ops = opsNeeded(waiting.txn);
        if (group.length > 0 && group.length + 1 + Math.max(most, ops) > this.maxTxnOps) {
          this.sendGroup(group);
          group = [];
          most = 0;
        }
        group.push(waiting);
        most = Math.max(most, ops);
      }
      this.sendGroup(group);
    }
  }

  private sendGroup(group: Waiting[]): void {
    if (group.length === 1) {
      const [waiting] = group as [Waiting];
      this.alone(waiting.txn).then(waiting.resolve, waiting.reject);
      return;
    }
    this.onWire++;
    this.rpc
      .txn({ compare: [], success: group.map((w) => ({ request_txn: w.txn })), failure: [] })
      .then(
        (response) => {
          this.onWire--;
          group.forEach((waiting, k) => {
            const answer = response.responses[k]?.response_txn;
            if (answer) waiting.resolve(answer);
            else waiting.reject(missingPart());
          });
        },
        (error: unknown) => {
          this.onWire--;
          if (refusedAsAWhole(error)) {
            for (const w of group) this.alone(w.txn).then(w.resolve, w.reject);
          } else {
            for (const w of group) w.reject(error);
          }
        },
      );
  }
}

/** A grouped transaction's answer lacked one part: whether that part took effect is unknown. */
function missingPart(): LeaseError {
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    'etcd answered a grouped transaction without the answer of one of its parts',
  );
}
