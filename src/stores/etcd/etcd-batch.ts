import type { EtcdTxnRequest, EtcdTxnResponse } from './etcd-driver.js';
import type { EtcdRpc } from './etcd-rpc.js';

/** How one batch becomes nested transactions and their answers become results. */
export interface NestedBatch<T, R> {
  /** Items with the same key never share an outer transaction (etcd refuses two writes to a key). */
  keyOf(item: T): string;
  /** The item's own transaction; every item's has the same shape (see `opsNeeded`). */
  txnOf(item: T, index: number): EtcdTxnRequest;
  /** The item's result from its transaction's answer. */
  answerOf(item: T, index: number, answer: EtcdTxnResponse): R;
}

/**
 * Runs one nested transaction per item inside outer transactions without compares, so each item
 * gets its own outcome from one round trip per outer transaction; results in input order.
 *
 * etcd counts a transaction's operations as the longest of its compare, success and failure
 * lists, and gives each nested transaction only what that leaves of `--max-txn-ops`: an outer
 * transaction of `n` nested ones that each need `k` therefore needs `n + k`, so it carries
 * `maxTxnOps − k` items (126 acquires or releases, 125 renewals at the default 128).
 *
 * The outer transactions of one round are sent concurrently, each built just before it is sent
 * and with a turn of the event loop between them, and each answer is read as it arrives: a batch
 * of thousands never holds the loop for longer than one outer transaction takes to build or read
 * (design rule 6). All of them settle before this answers; then the first failure is thrown.
 * An item whose key repeats goes in a later round, after the first settled.
 */
export async function sendNested<T, R>(
  rpc: EtcdRpc,
  maxTxnOps: number,
  items: readonly T[],
  batch: NestedBatch<T, R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  if (items.length === 0) return out;
  const size = Math.max(1, maxTxnOps - opsNeeded(batch.txnOf(items[0]!, 0)));
  for (const round of rounds(items, batch.keyOf)) {
    const sent: Promise<void>[] = [];
    for (let start = 0; start < round.length; start += size) {
      if (start > 0) await new Promise((resolve) => setImmediate(resolve));
      const indexes = round.slice(start, start + size);
      const request = {
        compare: [],
        success: indexes.map((i) => ({ request_txn: batch.txnOf(items[i]!, i) })),
        failure: [],
      };
      sent.push(
        rpc.txn(request).then((response) => {
          indexes.forEach((i, k) => {
            out[i] = batch.answerOf(items[i]!, i, response.responses[k]?.response_txn ?? NO_ANSWER);
          });
        }),
      );
    }
    const settled = await Promise.allSettled(sent);
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
  }
  return out;
}

/** What a nested transaction missing from an answer counts as: not applied. */
const NO_ANSWER: EtcdTxnResponse = Object.freeze({ succeeded: false, responses: [] });

/**
 * The `--max-txn-ops` a transaction needs: etcd counts the longest of its compare, success and
 * failure lists, and lets each nested transaction use only what that leaves.
 */
export function opsNeeded(txn: EtcdTxnRequest): number {
  const own = Math.max(txn.compare.length, txn.success.length, txn.failure.length);
  const nested = [...txn.success, ...txn.failure].map((op) =>
    op.request_txn ? opsNeeded(op.request_txn) : 0,
  );
  return own + Math.max(0, ...nested);
}

/** Indexes of `items` in rounds where each key appears at most once, in input order. */
function rounds<T>(items: readonly T[], keyOf: (item: T) => string): number[][] {
  const seen = new Map<string, number>();
  const out: number[][] = [];
  items.forEach((item, i) => {
    const key = keyOf(item);
    const round = seen.get(key) ?? 0;
    seen.set(key, round + 1);
    (out[round] ??= []).push(i);
  });
  return out;
}
