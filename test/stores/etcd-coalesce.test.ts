import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore, type Lease, type LeaseRecord, type LeaseStore } from '../../src/index.js';
import { EtcdStore } from '../../src/stores/etcd/index.js';
import type { EtcdClient, EtcdTxnRequest } from '../../src/stores/etcd/etcd-driver.js';
import { EtcdCluster, etcdUnavailable } from '../harness/etcd-server.js';
import { rpcCounter } from '../harness/etcd-rpcs.js';
import { describeServer } from '../harness/describe-server.js';

/** A single-lease transition and what it gave, in a form that does not depend on timing. */
type Step =
  | { kind: 'acquire'; resource: string; owner: string }
  | { kind: 'release'; resource: string; owner: string; token: number }
  | { kind: 'renew'; resource: string; owner: string; token: number };

function outcome(result: Lease | boolean | null): unknown {
  if (result === null || typeof result === 'boolean') return result;
  return { resource: result.resource, owner: result.owner, token: result.token };
}

/** A record without its expiry time, which depends on when the call was made. */
function shape(record: LeaseRecord | null): unknown {
  if (!record) return null;
  return { ...record, expiresAt: record.expiresAt === 0 ? 0 : 'set' };
}

describeServer('etcd store: single-lease transitions sent together', etcdUnavailable(), () => {
  let etcd: EtcdCluster;
  let raw: Etcd3;
  const opened: LeaseStore[] = [];
  const open = async (prefix: string, params = ''): Promise<EtcdStore> => {
    const store = await openStore(`${etcd.url}?prefix=${prefix}&timeoutMs=3000${params}`);
    opened.push(store);
    return store as EtcdStore;
  };

  const rpcsOf = rpcCounter(() => etcd.members[0]!.endpoint);

  /**
   * The same starting state under `prefix`: `free/*` never acquired, `back/*` acquired and
   * released (token 1), `held/*` held by x, `mine/*` held by y. Returns y's leases by resource.
   */
  const prepare = async (store: EtcdStore): Promise<Map<string, Lease>> => {
    const n = 6;
    for (let i = 0; i < n; i++) {
      await store.release((await store.tryAcquire(`back/${i}`, 'x', 5000))!);
      await store.tryAcquire(`held/${i}`, 'x', 5000);
    }
    const mine = new Map<string, Lease>();
    for (let i = 0; i < 2 * n; i++) {
      const lease = (await store.tryAcquire(`mine/${i}`, 'y', 5000))!;
      mine.set(lease.resource, lease);
    }
    return mine;
  };

  /** Acquires of free, released and held resources, releases with the right token, a wrong one and a wrong owner. */
  const steps = (mine: Map<string, Lease>): Step[] => {
    const out: Step[] = [];
    for (let i = 0; i < 6; i++) {
      out.push({ kind: 'acquire', resource: `free/${i}`, owner: 'a' });
      out.push({ kind: 'acquire', resource: `back/${i}`, owner: 'a' });
      out.push({ kind: 'acquire', resource: `held/${i}`, owner: 'a' });
      const right = mine.get(`mine/${i}`)!;
      out.push({ kind: 'release', resource: right.resource, owner: 'y', token: right.token });
    }
    for (let i = 6; i < 9; i++) {
      out.push({ kind: 'release', resource: `mine/${i}`, owner: 'y', token: 2 });
      out.push({ kind: 'release', resource: `mine/${i + 3}`, owner: 'x', token: 1 });
    }
    return out;
  };

  const run = (store: EtcdStore, step: Step): Promise<Lease | boolean | null> => {
    if (step.kind === 'acquire') return store.tryAcquire(step.resource, step.owner, 5000);
    const ref = { resource: step.resource, owner: step.owner, token: step.token };
    if (step.kind === 'release') return store.release(ref);
    return store.renew({ ...ref, expiresAt: 0, ttlMs: 5000 });
  };

  beforeAll(async () => {
    etcd = await EtcdCluster.start();
    raw = new Etcd3({ hosts: `http://${etcd.members[0]!.endpoint}` });
  });
  afterAll(async () => {
    await Promise.allSettled(opened.map((s) => s.close()));
    raw?.close();
    await etcd?.stop();
  });

  it('transitions asked while one is on the wire go in one Txn, each with the outcome it has alone', async () => {
    const together = await open('/co1/');
    const alone = await open('/co2/');
    const mineTogether = await prepare(together);
    const mineAlone = await prepare(alone);
    // The acquiring owner's etcd lease is in place, so every call reaches etcd in this turn.
    await together.tryAcquire('warm', 'a', 5000);
    await alone.tryAcquire('warm', 'a', 5000);

    const asked = steps(mineTogether);
    expect(asked).toHaveLength(30);
    let grouped: unknown[] = [];
    const rpcs = await rpcsOf(async () => {
      grouped = (await Promise.all(asked.map((step) => run(together, step)))).map(outcome);
    });
    // The first goes at once, alone; the 29 asked meanwhile go together in the next turn.
    expect(rpcs.Txn).toBe(2);
    expect(rpcs.LeaseGrant).toBeUndefined();

    const sequential: unknown[] = [];
    for (const step of steps(mineAlone)) sequential.push(outcome(await run(alone, step)));
    expect(grouped).toEqual(sequential);
    // And what they should be: a first token, the next token, refused, released, refused (×2).
    expect(grouped.slice(0, 4)).toEqual([
      { resource: 'free/0', owner: 'a', token: 1 },
      { resource: 'back/0', owner: 'a', token: 2 },
      null,
      true,
    ]);
    expect(grouped.slice(24)).toEqual([false, false, false, false, false, false]);

    const state = async (store: EtcdStore): Promise<unknown[]> =>
      (await store.list({ limit: 100 })).map(shape);
    expect(await state(together)).toEqual(await state(alone));
  });

  it('renewals asked together go together after one grant and keep-alive, and a renewal of a lease not held is refused', async () => {
    const store = await open('/co3/');
    const leases: Lease[] = [];
    for (let i = 0; i < 10; i++) leases.push((await store.tryAcquire(`r/${i}`, 'a', 5000))!);
    await store.release(leases[9]!);
    let renewed: (Lease | null)[] = [];
    const rpcs = await rpcsOf(async () => {
      renewed = await Promise.all(leases.map((lease) => store.renew(lease, 6000)));
    });
    // A new TTL: one etcd lease granted and kept alive for all ten; the first renewal goes alone
    // as the others wait for the keep-alive, which they share, and then go together (in one Txn,
    // or two when the first's answer was back before the keep-alive's).
    expect(rpcs.LeaseGrant).toBe(1);
    expect(rpcs.LeaseKeepAlive).toBe(1);
    expect(rpcs.Txn).toBeGreaterThanOrEqual(2);
    expect(rpcs.Txn).toBeLessThanOrEqual(3);
    expect(renewed.slice(0, 9).every((l) => l?.ttlMs === 6000)).toBe(true);
    expect(renewed[9]).toBeNull();
    for (const lease of renewed.slice(0, 9)) {
      expect(await store.get(lease!.resource)).toEqual({
        resource: lease!.resource,
        owner: 'a',
        token: 1,
        expiresAt: lease!.expiresAt,
      });
    }
  });

  it('racing acquires of one resource: one wins with the next token, the same resource never shares a Txn', async () => {
    const store = await open('/co4/');
    const owners = Array.from({ length: 12 }, (_, i) => `o${i}`);
    await store.release((await store.tryAcquire('hot', 'x', 5000))!);
    let expected = 2;
    for (let race = 0; race < 3; race++) {
      for (const owner of owners) await store.tryAcquire(`warm/${race}/${owner}`, owner, 5000);
      let results: (Lease | null)[] = [];
      const rpcs = await rpcsOf(async () => {
        results = await Promise.all(
          owners.flatMap((owner) => [
            store.tryAcquire('hot', owner, 5000),
            store.tryAcquire(`cold/${race}`, owner, 5000),
          ]),
        );
      });
      // hot by o0 goes alone; then hot ×11 and cold ×12 in 12 rounds of one each: 13 Txns for 24.
      expect(rpcs.Txn).toBe(13);
      const hot = results.filter((_, i) => i % 2 === 0).filter((l) => l !== null);
      const cold = results.filter((_, i) => i % 2 === 1).filter((l) => l !== null);
      expect(hot).toHaveLength(1);
      expect(cold).toHaveLength(1);
      expect(hot[0]!.token).toBe(expected);
      expect(cold[0]!.token).toBe(1);
      expect(await store.get('hot')).toMatchObject({ owner: hot[0]!.owner, token: expected });
      expect(await store.release(hot[0]!)).toBe(true);
      expected++;
    }
  });

  it('splits a turn into Txns that keep to maxTxnOps', async () => {
    // An acquire needs 2 of etcd's operations: an outer Txn of n of them needs n + 2, so 6 fit in 8.
    const store = await open('/co5/', '&maxTxnOps=8');
    await store.tryAcquire('warm', 'a', 5000);
    let leases: (Lease | null)[] = [];
    const rpcs = await rpcsOf(async () => {
      leases = await Promise.all(
        Array.from({ length: 20 }, (_, i) => store.tryAcquire(`s/${i}`, 'a', 5000)),
      );
    });
    expect(rpcs.Txn).toBe(1 + Math.ceil(19 / 6));
    expect(leases.every((l) => l?.token === 1)).toBe(true);
  });

  it('a Txn refused for a lapsed etcd lease sends each part alone: only the part on that lease starts over', async () => {
    const store = await open('/co6/');
    const keysOf = async (): Promise<Record<string, string>> => {
      const { kvs } = await raw.kv.range({
        key: Buffer.from('/co6/'),
        range_end: Buffer.from('/co60'),
      });
      return Object.fromEntries(
        kvs
          .filter((kv) => kv.key.toString().endsWith('\0h'))
          .map((kv) => [kv.key.toString().slice(5, -2), kv.lease]),
      );
    };
    for (const owner of ['a', 'b', 'c']) await store.tryAcquire(`warm/${owner}`, owner, 5000);
    const before = await keysOf();
    await raw.leaseClient.leaseRevoke({ ID: before['warm/a']! });
    let leases: (Lease | null)[] = [];
    const rpcs = await rpcsOf(async () => {
      leases = await Promise.all([
        store.tryAcquire('r/c', 'c', 5000), // alone
        store.tryAcquire('r/a', 'a', 5000), // with r/b: refused, as a's etcd lease is gone
        store.tryAcquire('r/b', 'b', 5000),
      ]);
    });
    expect(leases.map((l) => l?.token)).toEqual([1, 1, 1]);
    // c alone, the group, a and b alone, a once more on a fresh etcd lease.
    expect(rpcs).toMatchObject({ Txn: 5, LeaseGrant: 1 });
    const after = await keysOf();
    expect(after['r/b']).toBe(before['warm/b']);
    expect(after['r/c']).toBe(before['warm/c']);
    expect(after['r/a']).not.toBe(before['warm/a']);
  });

  it('a failed group is reported to each of its parts, none of which took effect', async () => {
    let failing = false;
    const groups: EtcdTxnRequest[] = [];
    const real = (raw as unknown as EtcdClient).kv;
    const client: EtcdClient = {
      kv: {
        range: (request, options) => real.range(request, options),
        txn: (request, options) => {
          const group = request.compare.length === 0 && !!request.success[0]?.request_txn;
          if (group) groups.push(request);
          if (group && failing) return Promise.reject(new Error('injected: connection reset'));
          return real.txn(request, options);
        },
      },
      leaseClient: (raw as unknown as EtcdClient).leaseClient,
      watch: () => (raw as unknown as EtcdClient).watch(),
      close: () => {},
    };
    const store = await EtcdStore.open(client, { prefix: '/co7/' });
    opened.push(store);
    const held = (await store.tryAcquire('held', 'y', 5000))!;
    const kept = (await store.tryAcquire('kept', 'y', 5000))!;
    await store.tryAcquire('warm', 'a', 5000);

    failing = true;
    const settled = await Promise.allSettled([
      store.tryAcquire('first', 'a', 5000), // alone, answered
      store.tryAcquire('g/1', 'a', 5000),
      store.tryAcquire('g/2', 'a', 5000),
      store.release(held),
      store.release(kept),
    ]);
    failing = false;
    expect(groups).toHaveLength(1);
    expect(groups[0]!.success).toHaveLength(4);
    expect(settled[0]).toMatchObject({ status: 'fulfilled', value: { token: 1 } });
    for (const result of settled.slice(1)) {
      expect(result.status).toBe('rejected');
      const error = (result as PromiseRejectedResult).reason as { code: string; message: string };
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.message).toContain('injected: connection reset');
    }
    expect(await store.get('g/1')).toBeNull();
    expect(await store.get('g/2')).toBeNull();
    expect(await store.get('held')).toMatchObject({ owner: 'y', token: 1 });
    expect(await store.get('kept')).toMatchObject({ owner: 'y', token: 1 });

    // The store goes on: alone again, then grouped again.
    expect(await store.release(held)).toBe(true);
    const again = await Promise.all([
      store.tryAcquire('g/1', 'a', 5000),
      store.tryAcquire('g/2', 'a', 5000),
      store.tryAcquire('g/3', 'a', 5000),
    ]);
    expect(again.map((l) => l?.token)).toEqual([1, 1, 1]);
    expect(groups).toHaveLength(2);
  });
});
