import { ErrorCode, LeaseError } from '../../core/errors.js';
import { GroupCommit, MemberFailure, nextTurn, type GroupReply } from '../../core/group-commit.js';
import { opsNeeded } from './etcd-batch.js';
import type { EtcdTxnRequest, EtcdTxnResponse } from './etcd-driver.js';
import { refusedAsAWhole } from './etcd-errors.js';
import { isOrdered, ordered, type EtcdRpc } from './etcd-rpc.js';

/** One single-lease transaction waiting for its turn. */
interface Waiting {
  readonly resource: string;
  readonly txn: EtcdTxnRequest;
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
  private readonly group: GroupCommit<Waiting, EtcdTxnResponse>;

  constructor(
    private readonly rpc: EtcdRpc,
    maxTxnOps: number,
  ) {
    this.group = new GroupCommit({
      schedule: nextTurn,
      keying: { mode: 'once', keyOf: (waiting) => waiting.resource },
      limit: {
        size: (waiting) => opsNeeded(waiting.txn),
        // The outer transaction counts one operation per part, plus the largest part's own.
        fits: (count, _total, largest) => count + largest <= maxTxnOps,
      },
      aloneWhenIdle: true,
      send: (group, reply) => this.sendGroup(group, reply),
    });
  }

  /** The answer to `txn`, a transaction on `resource`'s keys alone. */
  send(resource: string, txn: EtcdTxnRequest): Promise<EtcdTxnResponse> {
    return this.group.run({ resource, txn });
  }

  private sendGroup(group: readonly Waiting[], reply: GroupReply<EtcdTxnResponse>): void {
    if (group.length === 1) {
      this.rpc.txn(group[0]!.txn).then((answer) => reply.answer([answer]), reply.fail);
      return;
    }
    const merged = {
      compare: [],
      success: group.map((w) => ({ request_txn: w.txn })),
      failure: [],
    };
    if (group.some((w) => isOrdered(w.txn))) ordered(merged);
    this.rpc.txn(merged).then(
      (response) =>
        reply.answer(
          group.map(
            (_, k) => response.responses[k]?.response_txn ?? new MemberFailure(missingPart()),
          ),
        ),
      (error: unknown) => {
        if (refusedAsAWhole(error)) reply.answer(group.map((w) => this.rpc.txn(w.txn)));
        else reply.fail(error);
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
