import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore, type Lease, type LeaseStore } from '../../src/index.js';
import type { EtcdStore } from '../../src/stores/etcd/index.js';
import { opsNeeded } from '../../src/stores/etcd/etcd-batch.js';
import { firstPerTxn, firstTaken, firstTxn } from '../../src/stores/etcd/etcd-first.js';
import { groupMaxFor, groupTokens, groupTxn } from '../../src/stores/etcd/etcd-group.js';
import { EtcdKeys } from '../../src/stores/etcd/etcd-keys.js';
import { Nonces } from '../../src/stores/etcd/etcd-nonce.js';
import { EtcdCluster, etcdUnavailable } from '../harness/etcd-server.js';
import { rpcCounter } from '../harness/etcd-rpcs.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection, sleep } from '../harness/expect-error.js';

const permits = (name: string, n: number): string[] =>
  Array.from({ length: n }, (_, i) => (i === 0 ? name : `${name}\u0001permit=${i}`));
const slots = (name: string): string[] =>
  Array.from({ length: 256 }, (_, i) => `${name}\u0001queue=${String(i).padStart(3, '0')}`);
const names = (base: string, n: number): string[] =>
  Array.from({ length: n }, (_, i) => `${base}/${i}`);

describeServer('etcd store: groups and acquireFirst', etcdUnavailable(), () => {
  let etcd: EtcdCluster;
  let raw: Etcd3;
  let n = 0;
  const opened: LeaseStore[] = [];
  const open = async (prefix: string, params = ''): Promise<EtcdStore> => {
    const store = await openStore(`${etcd.url}?prefix=${prefix}&timeoutMs=3000${params}`);
    opened.push(store);
    return store as EtcdStore;
  };
  const fresh = (): string => `/g${++n}/`;
  const rpcsOf = rpcCounter(() => etcd.members[0]!.endpoint);
  /** Every key under `prefix` as `name → version`: what a refused call must leave as it was. */
  const versions = async (prefix: string): Promise<Record<string, string>> => {
    const end = Buffer.from(prefix);
    end[end.length - 1]!++;
    const { kvs } = await raw.kv.range({ key: Buffer.from(prefix), range_end: end });
    return Object.fromEntries(kvs.map((kv) => [kv.key.toString(), `${kv.version}@${kv.lease}`]));
  };
  /**
   * Keeps `owner`'s etcd lease freshly kept alive, so that the acquire counted next is its
   * transaction alone (an owner lease near its end gets a keep-alive alongside: see etcd-leases.ts).
   */
  const warm = async (store: EtcdStore, owner: string, ttlMs = 5000): Promise<void> => {
    const lease = await store.tryAcquire(`warm/${owner}/${++n}`, owner, ttlMs);
    await store.renew(lease!);
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

  it('declares as many group members as one transaction holds under maxTxnOps', async () => {
    expect((await open(fresh())).capabilities.atomicGroupMax).toBe(64);
    expect((await open(fresh(), '&maxTxnOps=8')).capabilities.atomicGroupMax).toBe(4);
    expect(groupMaxFor(1000)).toBe(100);
    const keys = new EtcdKeys('/x/');
    const members = names('m', 64).map((r) => keys.of(r));
    // One compare and one read-back per member, each member's writes a nested transaction of 3.
    expect(opsNeeded(groupTxn(members, 'o', '1', 1, 'n'.repeat(32)))).toBe(64 + 3);
    expect(firstPerTxn(128)).toBe(42);
    expect(firstPerTxn(1000)).toBe(42); // the protobuf nesting limit
    expect(firstPerTxn(8)).toBe(2);
    // k compares, then a chain of k levels: k + 2 + k operations.
    expect(opsNeeded(firstTxn(members.slice(0, 42), 'o', '1', 1, 'n'.repeat(32)))).toBe(86);
    expect(opsNeeded(firstTxn(members.slice(0, 1), 'o', '1', 1, 'n'.repeat(32)))).toBe(4);
    expect(firstPerTxn(4)).toBe(1);
  });

  it.each([2, 10, 64])(
    'acquireAll of %i members is one Txn, granted and refused; a refused group writes nothing',
    async (size) => {
      const prefix = fresh();
      const store = await open(prefix);
      const other = await open(prefix);
      const group = names('r', size);
      await warm(store, 'a');
      let got: Lease[] | null = null;
      expect(await rpcsOf(async () => (got = await store.acquireAll(group, 'a', 5000)))).toEqual({
        Txn: 1,
      });
      expect(got!.map((l) => [l.resource, l.owner, l.token])).toEqual(
        group.map((r) => [r, 'a', 1]),
      );
      expect((await other.get(group[size - 1]!))!.owner).toBe('a');
      await store.releaseMany(got!);

      // One member held by someone else: the whole group is refused, nothing moves.
      const blocker = await other.tryAcquire(group[size - 1]!, 'b', 5000);
      expect(blocker?.token).toBe(2);
      await warm(store, 'a');
      const listed = await store.list({ prefix: 'r/' });
      const before = await versions(prefix);
      expect(await rpcsOf(async () => (got = await store.acquireAll(group, 'a', 5000)))).toEqual({
        Txn: 1,
      });
      expect(got).toBeNull();
      expect(await versions(prefix)).toEqual(before);
      expect(await store.list({ prefix: 'r/' })).toEqual(listed);
      await other.release(blocker!);
      // The next grant of each member comes after every token before it.
      const again = await store.acquireAll(group, 'a', 5000);
      expect(again!.map((l) => l.token)).toEqual(group.map((_, i) => (i === size - 1 ? 3 : 2)));
    },
  );

  it('a group beyond atomicGroupMax is taken member by member in resource order, whole or not at all', async () => {
    const store = await open(fresh(), '&maxTxnOps=8');
    const group = names('big', 5);
    await warm(store, 'a');
    const rpcs = await rpcsOf(() => store.acquireAll(group, 'a', 5000));
    expect(rpcs.Txn).toBe(5);
  });

  it('acquireFirst over 5 permits is one Txn, with one free and with none free', async () => {
    const store = await open(fresh());
    const other = await open(store.prefix);
    const candidates = permits('sem', 5);
    for (const r of candidates.slice(0, 4)) await other.tryAcquire(r, 'b', 5000);
    await warm(store, 'a');
    let got: Lease | null = null;
    expect(
      await rpcsOf(async () => (got = await store.acquireFirst(candidates, 'a', 5000))),
    ).toEqual({
      Txn: 1,
    });
    expect(got).toMatchObject({ resource: candidates[4], owner: 'a', token: 1 });
    // Each caller of acquireFirst is a different owner, or the same owner without the candidates it
    // holds: an owner's own holds on the same etcd lease cost a second Txn (see the test below).
    await warm(store, 'c');
    const before = await versions(store.prefix);
    expect(
      await rpcsOf(async () => (got = await store.acquireFirst(candidates, 'c', 5000))),
    ).toEqual({
      Txn: 1,
    });
    expect(got).toBeNull();
    expect(await versions(store.prefix)).toEqual(before);
  });

  it('acquireFirst over the 256 slots of a fair line: one Txn when one of the first 42 is free; else one Range and a Txn per 42 that look free', async () => {
    const store = await open(fresh());
    const other = await open(store.prefix);
    const line = slots('fair');
    await other.acquireMany(line.slice(0, 255), 'b', 10_000);
    await other.release((await other.get(line[20]!))!);
    await warm(store, 'a');
    let got: Lease | null = null;
    // Slot 20 is free, within the first transaction's chain.
    expect(await rpcsOf(async () => (got = await store.acquireFirst(line, 'a', 5000)))).toEqual({
      Txn: 1,
    });
    expect(got).toMatchObject({ resource: line[20], token: 2 });
    // Only slot 255 is free: past the first 42, found by the list and taken in one more Txn.
    await warm(store, 'c');
    expect(await rpcsOf(async () => (got = await store.acquireFirst(line, 'c', 5000)))).toEqual({
      Txn: 2,
      Range: 1,
    });
    expect(got).toMatchObject({ resource: line[255], token: 1 });
    // None free: the first Txn, the list, and nothing else.
    await warm(store, 'd');
    const before = await versions(store.prefix);
    expect(await rpcsOf(async () => (got = await store.acquireFirst(line, 'd', 5000)))).toEqual({
      Txn: 1,
      Range: 1,
    });
    expect(got).toBeNull();
    expect(await versions(store.prefix)).toEqual(before);
  });

  it('recognises a group or a chain the driver sent twice after the first had landed, and takes nothing more', async () => {
    const prefix = fresh();
    const keys = new EtcdKeys(prefix);
    const lease = await raw.leaseClient.leaseGrant({ TTL: 5 });
    const nonces = new Nonces();
    const members = ['a', 'b', 'c'].map((r) => keys.of(r));
    const nonce = nonces.next();
    const txn = groupTxn(members, 'o', lease.ID, Date.now() + 5000, nonce);
    const first = await raw.kv.txn(txn);
    const retried = await raw.kv.txn(txn);
    expect(groupTokens(first, members, 'o', nonce)).toEqual([1, 1, 1]);
    expect(retried.succeeded).toBe(false);
    expect(groupTokens(retried, members, 'o', nonce)).toEqual([1, 1, 1]);
    expect(groupTokens(retried, members, 'o', nonces.next())).toBeUndefined();
    expect(groupTokens(retried, members, 'p', nonce)).toBeUndefined();

    const candidates = ['p0', 'p1', 'p2', 'p3'].map((r) => keys.of(r));
    const other = await raw.leaseClient.leaseGrant({ TTL: 5 });
    await raw.kv.txn(groupTxn([candidates[0]!], 'x', other.ID, Date.now() + 5000, nonces.next()));
    const chainNonce = nonces.next();
    const chain = firstTxn(candidates, 'o', lease.ID, Date.now() + 5000, chainNonce);
    const taken = (response: Awaited<ReturnType<typeof raw.kv.txn>>, withNonce = chainNonce) =>
      firstTaken(response, candidates, 'o', lease.ID, withNonce);
    expect(taken(await raw.kv.txn(chain))).toEqual({ index: 1, token: 1, dataRevision: '0' });
    const again = await raw.kv.txn(chain);
    expect(again.succeeded).toBe(false);
    expect(taken(again)).toEqual({ index: 1, token: 1, dataRevision: '0' });
    // Another acquire by the same owner on the same etcd lease: try the other candidates.
    expect(taken(again, nonces.next())).toEqual({ ownHeld: [1] });
    const store = await open(prefix);
    expect(await store.get('p2')).toBeNull(); // the retry did not go on to the next candidate
  });

  it('an owner that holds a candidate on the same etcd lease: the chain is sent again without it', async () => {
    const store = await open(fresh());
    const candidates = permits('own', 3);
    await store.tryAcquire(candidates[0]!, 'a', 5000);
    await warm(store, 'a');
    let got: Lease | null = null;
    expect(
      await rpcsOf(async () => (got = await store.acquireFirst(candidates, 'a', 5000))),
    ).toEqual({
      Txn: 2,
    });
    expect(got).toMatchObject({ resource: candidates[1], owner: 'a', token: 1 });
  });

  it('tokens keep rising per record across group grants, single grants, acquireFirst, release and expiry', async () => {
    const store = await open(fresh());
    const pair = ['t/a', 't/b'];
    const seen: Record<string, number[]> = { 't/a': [], 't/b': [] };
    const note = (leases: (Lease | null)[] | null): Lease[] => {
      for (const l of leases ?? []) if (l) seen[l.resource]!.push(l.token);
      return (leases ?? []).filter((l): l is Lease => l !== null);
    };
    await store.releaseMany(note(await store.acquireAll(pair, 'a', 5000)));
    const single = note([await store.tryAcquire('t/a', 'a', 5000)]);
    const first = note([await store.acquireFirst(pair, 'b', 5000)]); // t/a held: t/b
    expect(first[0]!.resource).toBe('t/b');
    await store.releaseMany([...single, ...first]);
    // Held on a 1 s TTL and never renewed: etcd drops them, and the next group gets new tokens.
    note(await store.acquireAll(pair, 'c', 1000));
    const deadline = Date.now() + 10_000;
    let regrant: Lease[] | null = null;
    while (!regrant && Date.now() < deadline) {
      await sleep(250);
      regrant = await store.acquireAll(pair, 'd', 5000);
    }
    note(regrant);
    note([await store.acquireFirst(pair, 'e', 5000)]); // both held: nothing
    expect(seen).toEqual({ 't/a': [1, 2, 3, 4], 't/b': [1, 2, 3, 4] });
    expect((await store.get('t/a'))!.token).toBe(4);
  });

  it('racing groups over crossing sets never hold a record twice; racing acquireFirst never grants more than the permits', async () => {
    const prefix = fresh();
    const stores = await Promise.all(Array.from({ length: 4 }, () => open(prefix)));
    const ring = names('ring', 6);
    const groups = [
      [ring[0]!, ring[1]!, ring[2]!],
      [ring[2]!, ring[3]!, ring[4]!],
      [ring[4]!, ring[5]!, ring[0]!],
      [ring[5]!, ring[3]!, ring[1]!],
    ];
    const last = new Map<string, number>();
    for (let round = 0; round < 15; round++) {
      const granted = await Promise.all(
        stores.map((s, i) => s.acquireAll([...groups[i]!].reverse(), `w${i}`, 5000)),
      );
      const held = granted.flatMap((g) => g ?? []);
      expect(new Set(held.map((l) => l.resource)).size).toBe(held.length);
      expect(held.length).toBeGreaterThan(0);
      for (const l of held) {
        expect(l.token).toBeGreaterThan(last.get(l.resource) ?? 0);
        last.set(l.resource, l.token);
      }
      await Promise.all(granted.map((g, i) => g && stores[i]!.releaseMany(g)));
    }
    for (let round = 0; round < 10; round++) {
      const sem = permits(`sem${round}`, 3);
      const callers = Array.from({ length: 6 }, (_, i) =>
        stores[i % 4]!.acquireFirst([...sem.slice(i % 3), ...sem.slice(0, i % 3)], `c${i}`, 5000),
      );
      const got = (await Promise.all(callers)).filter((l): l is Lease => l !== null);
      expect(got).toHaveLength(3);
      expect(new Set(got.map((l) => l.resource)).size).toBe(3);
    }
  });

  it("with maxTxnOps over the server's --max-txn-ops, the largest group still fits one Txn", async () => {
    const store = await open(fresh(), '&maxTxnOps=1000');
    expect(store.capabilities.atomicGroupMax).toBe(100);
    const group = names('over', 100);
    // 100 compares and read-backs, each member's writes a nested transaction of 3: 103 operations.
    const keys = new EtcdKeys('/x/');
    expect(
      opsNeeded(
        groupTxn(
          group.map((r) => keys.of(r)),
          'o',
          '1',
          1,
          'n'.repeat(32),
        ),
      ),
    ).toBe(103);
    let got: Lease[] | null = null;
    expect(
      await rpcsOf(async () => (got = await store.acquireAll(group, 'a', 5000))),
    ).toMatchObject({ Txn: 1 });
    expect(got!.map((l) => l.token)).toEqual(group.map(() => 1));
    await store.releaseMany(got!);
    // A chain stays within 42 candidates whatever maxTxnOps says: 126 operations.
    expect(await store.acquireFirst(slots('over'), 'a', 5000)).toMatchObject({ token: 1 });
  });

  it('a closed store refuses groups and acquireFirst with STORE_UNAVAILABLE', async () => {
    const store = await open(fresh());
    await store.close();
    expect((await rejection(store.acquireAll(['x', 'y'], 'a', 5000))).code).toBe(
      'STORE_UNAVAILABLE',
    );
    expect((await rejection(store.acquireFirst(['x', 'y'], 'a', 5000))).code).toBe(
      'STORE_UNAVAILABLE',
    );
  });
});
