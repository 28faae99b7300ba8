import { describe, expect, it } from 'vitest';
import { callOptionsFor, EtcdRpc, ordered } from '../../src/stores/etcd/etcd-rpc.js';
import type { EtcdClient, EtcdTxnRequest } from '../../src/stores/etcd/etcd-driver.js';

/**
 * etcd3 retries a call that found its endpoint unreachable on the next endpoint, handing each
 * attempt the same request. A copy of a data write sent after the store answered the call as
 * failed could land after the holder's next write and put the older value back (seen in a lab run
 * with the leader killed: a grant read progress 54 after 55-61 had landed). So a retry, and every
 * attempt of a data write, carries the call's own deadline: gRPC drops it then instead of sending it.
 */
describe('etcd call options per attempt', () => {
  /** An EtcdRpc whose client records the options each attempt would get, as etcd3 asks for them. */
  function attempts(
    request: EtcdTxnRequest,
    tries: number,
  ): ({ deadline?: unknown } | undefined)[] {
    const seen: ({ deadline?: unknown } | undefined)[] = [];
    const client = {
      kv: {
        txn: (params: EtcdTxnRequest) => {
          for (let i = 0; i < tries; i++) seen.push(callOptionsFor({ params }));
          return new Promise(() => undefined);
        },
      },
    } as unknown as EtcdClient;
    void new EtcdRpc(client, 5000).txn(request).catch(() => undefined);
    return seen;
  }

  const txn = (): EtcdTxnRequest => ({ compare: [], success: [], failure: [] });

  it('sends a first attempt without a gRPC deadline and a retry with the call deadline', () => {
    const before = Date.now();
    const [first, second, third] = attempts(txn(), 3);
    expect(first).toEqual({});
    expect(second!.deadline).toEqual(third!.deadline);
    expect(second!.deadline).toBeGreaterThanOrEqual(before + 5000);
    expect(second!.deadline).toBeLessThanOrEqual(Date.now() + 5000);
  });

  it('gives every attempt of a data write the deadline', () => {
    const [first, second] = attempts(ordered(txn()), 2);
    expect(first!.deadline).toEqual(expect.any(Number));
    expect(second!.deadline).toEqual(first!.deadline);
  });

  it('leaves calls it did not send alone', () => {
    expect(callOptionsFor({ params: { key: 'x' } })).toEqual({});
    expect(callOptionsFor({})).toEqual({});
  });
});
