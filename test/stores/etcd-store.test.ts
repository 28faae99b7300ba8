import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type LeaseStore } from '../../src/index.js';
import { EtcdStore } from '../../src/stores/etcd/index.js';
import { validUntil } from '../../src/core/time.js';
import { opsNeeded } from '../../src/stores/etcd/etcd-batch.js';
import { acquiredToken, acquireTxn, releaseTxn, renewTxn } from '../../src/stores/etcd/etcd-ops.js';
import { EtcdKeys } from '../../src/stores/etcd/etcd-keys.js';
import { NONCE_LENGTH } from '../../src/stores/etcd/etcd-record.js';
import { Nonces } from '../../src/stores/etcd/etcd-nonce.js';
import { EtcdCluster, etcdUnavailable } from '../harness/etcd-server.js';
import { rpcCounter } from '../harness/etcd-rpcs.js';
import { waitFor } from '../harness/processes.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection, sleep } from '../harness/expect-error.js';

describe('etcd store URLs', () => {
  it.each([
    ['etcd://u:pw1@127.0.0.1:1?prefx=x', 'prefx'],
    ['etcd://u:pw1@127.0.0.1:1/leases', 'path'],
    ['etcd:127.0.0.1:2379', 'etcd://'],
    ['etcd://u:pw1@127.0.0.1:1,', 'empty'],
    ['etcd://u:pw1@127.0.0.1:1?timeoutMs=soon', 'timeoutMs'],
    ['etcd://u:pw1@127.0.0.1:1?maxTxnOps=0', 'maxTxnOps'],
    ['etcd://u:pw1@127.0.0.1:1?prefix=a%00b', 'prefix'],
  ])('%s is refused, naming %s, without the password', async (url, field) => {
    const error = await rejection(openStore(url));
    expect(error.code).toBe('STORE_URL_INVALID');
    expect(error.message).toContain(field);
    expect(error.message).not.toContain('pw1');
  });

  it('refuses bad options given in code', () => {
    const client = {} as never;
    expect(() => new EtcdStore(client, { prefix: '' })).toThrow(/prefix/);
    expect(() => new EtcdStore(client, { timeoutMs: 0 })).toThrow(/timeoutMs/);
    expect(() => new EtcdStore(client, { maxTxnOps: 1.5 })).toThrow(/maxTxnOps/);
  });
});

describeServer('etcd store', etcdUnavailable(), () => {
  let etcd: EtcdCluster;
  let raw: Etcd3;
  const opened: LeaseStore[] = [];
  const open = async (prefix: string, params = ''): Promise<EtcdStore> => {
    const store = await openStore(`${etcd.url}?prefix=${prefix}&timeoutMs=2000${params}`);
    opened.push(store);
    return store as EtcdStore;
  };
  /** Every key under `prefix` with its lease and version, as `name → [lease, version]`. */
  const keysUnder = async (prefix: string): Promise<Record<string, [string, string]>> => {
    const end = Buffer.from(prefix);
    end[end.length - 1]!++;
    const { kvs } = await raw.kv.range({ key: Buffer.from(prefix), range_end: end });
    return Object.fromEntries(
      kvs.map((kv) => [
        kv.key.toString().slice(prefix.length).replace('\0', '|'),
        [kv.lease, kv.version],
      ]),
    );
  };

  const rpcsOf = rpcCounter(() => etcd.members[0]!.endpoint);

  /**
   * The last moment, on this process's monotonic clock, at which a read still found the hold key
   * of `resource` under `prefix`: polls until etcd has dropped it. A read that finds the key sent
   * at `t` proves etcd still held it at `t` or later.
   */
  const lastSeenHeld = async (prefix: string, resource: string): Promise<number> => {
    const key = Buffer.from(`${prefix}${resource}\0h`);
    let seen = -Infinity;
    const deadline = performance.now() + 20_000;
    while (performance.now() < deadline) {
      const sent = performance.now();
      const { kvs } = await raw.kv.range({ key });
      if (kvs.length === 0) return seen;
      seen = sent;
      await sleep(25);
    }
    throw new Error(`etcd still holds ${resource} after 20 s`);
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

  it('keeps a hold key on an etcd lease and a token key whose version is the token; a release empties the hold key and detaches it', async () => {
    const store = await open('/app1/');
    const first = (await store.tryAcquire('job', 'a', 5000))!;
    const held = await keysUnder('/app1/');
    expect(Object.keys(held)).toEqual(['job|h', 'job|t']);
    expect(held['job|h']![0]).not.toBe('0');
    expect(held['job|t']).toEqual(['0', '1']);
    expect(await raw.get('/app1/job\0h').string()).toBe('a');

    await store.release(first);
    const released = await keysUnder('/app1/');
    expect(released['job|h']![0]).toBe('0');
    expect(released['job|t']).toEqual(['0', '1']);
    expect(await raw.get('/app1/job\0h').string()).toBe('');
    expect(await store.get('job')).toEqual({ resource: 'job', owner: '', token: 1, expiresAt: 0 });
    expect(await store.release(first)).toBe(false);
    expect(await store.renew(first)).toBeNull();
    const second = (await store.tryAcquire('job', 'b', 5000))!;
    expect(second).toMatchObject({ token: 2 });
    expect((await keysUnder('/app1/'))['job|t']).toEqual(['0', '2']);
    // A renewal writes the record key; the record read is the later of it and the token key.
    const renewed = (await store.renew(second, 6000))!;
    expect((await keysUnder('/app1/'))['job|r']![0]).toBe('0');
    expect(await store.get('job')).toEqual({
      resource: 'job',
      owner: 'b',
      token: 2,
      expiresAt: renewed.expiresAt,
    });
    await store.release(renewed);
    const third = (await store.tryAcquire('job', 'c', 5000))!;
    expect(await store.get('job')).toEqual({
      resource: 'job',
      owner: 'c',
      token: 3,
      expiresAt: third.expiresAt,
    });
  });

  it('reads, releases and takes over what the earlier key layout left behind', async () => {
    // The earlier layout: an acquire wrote the hold key, the record and a token key holding a bare
    // 16-byte nonce; a release deleted the hold key and blanked the record.
    const store = await open('/legacy1/');
    const lease = await raw.leaseClient.leaseGrant({ TTL: 10 });
    const record = (owner: string, expiresAt: number): Buffer =>
      Buffer.from(JSON.stringify({ owner, expiresAt }));
    const legacyAcquire = (resource: string, owner: string, expiresAt: number) =>
      raw.kv.txn({
        compare: [],
        success: [
          {
            request_put: {
              key: Buffer.from(`/legacy1/${resource}\0h`),
              value: Buffer.from(owner),
              lease: lease.ID,
            },
          },
          {
            request_put: {
              key: Buffer.from(`/legacy1/${resource}\0r`),
              value: record(owner, expiresAt),
            },
          },
          {
            request_put: {
              key: Buffer.from(`/legacy1/${resource}\0t`),
              value: Buffer.alloc(16, 1),
            },
          },
        ],
        failure: [],
      });
    const expiresAt = Date.now() + 10_000;
    await legacyAcquire('held', 'old', expiresAt);
    await legacyAcquire('released', 'old', expiresAt);
    await raw.kv.txn({
      compare: [],
      success: [
        { request_delete_range: { key: Buffer.from('/legacy1/released\0h') } },
        { request_put: { key: Buffer.from('/legacy1/released\0r'), value: record('', 0) } },
      ],
      failure: [],
    });
    expect(await store.get('held')).toEqual({
      resource: 'held',
      owner: 'old',
      token: 1,
      expiresAt,
    });
    expect(await store.get('released')).toEqual({
      resource: 'released',
      owner: '',
      token: 1,
      expiresAt: 0,
    });
    expect(await store.tryAcquire('held', 'new', 5000)).toBeNull();
    expect(await store.acquireMany(['held'], 'new', 5000)).toEqual([
      {
        resource: 'held',
        lease: null,
        holder: { resource: 'held', owner: 'old', token: 1, expiresAt },
      },
    ]);
    const taken = (await store.tryAcquire('released', 'new', 5000))!;
    expect(taken).toMatchObject({ owner: 'new', token: 2 });
    expect(await store.get('released')).toMatchObject({ owner: 'new', token: 2 });
    const old = { resource: 'held', owner: 'old', token: 1 };
    expect(await store.release(old)).toBe(true);
    expect(await store.get('held')).toEqual({
      resource: 'held',
      owner: '',
      token: 1,
      expiresAt: 0,
    });
    expect(await store.tryAcquire('held', 'new', 5000)).toMatchObject({ token: 2 });
  });

  it('puts every key of one owner and TTL on one etcd lease, and renews them all with it', async () => {
    const store = await open('/app2/');
    const mine = await Promise.all(['r1', 'r2', 'r3'].map((r) => store.tryAcquire(r, 'a', 5000)));
    const theirs = await store.tryAcquire('r4', 'b', 5000);
    const leaseOf = async (): Promise<Record<string, string>> =>
      Object.fromEntries(
        Object.entries(await keysUnder('/app2/'))
          .filter(([k]) => k.endsWith('|h'))
          .map(([k, [lease]]) => [k.slice(0, -2), lease]),
      );
    const before = await leaseOf();
    expect(new Set([before.r1, before.r2, before.r3]).size).toBe(1);
    expect(before.r4).not.toBe(before.r1);

    const renewed = await store.renewMany([...mine.map((l) => l!), theirs!]);
    expect(renewed.every((r) => r !== null)).toBe(true);
    expect(await leaseOf()).toEqual(before);
    const ttl = await raw.leaseClient.leaseTimeToLive({ ID: before.r1!, keys: true });
    expect(ttl.keys.map((k) => k.toString().slice('/app2/'.length, -2)).sort()).toEqual([
      'r1',
      'r2',
      'r3',
    ]);
  });

  it('grants the owner lease whole seconds with at least half a second of headroom, and reports expiresAt by the TTL', async () => {
    const store = await open('/app3/');
    const before = Date.now();
    const lease = (await store.tryAcquire('job', 'a', 1500))!;
    expect(lease.ttlMs).toBe(1500);
    expect(lease.expiresAt).toBeGreaterThanOrEqual(before + 1500);
    expect(lease.expiresAt).toBeLessThanOrEqual(Date.now() + 1500);
    expect((await store.get('job'))!.expiresAt).toBe(lease.expiresAt);
    await store.tryAcquire('other', 'a', 1501);
    const held = await keysUnder('/app3/');
    const granted = async (key: string): Promise<string> =>
      (await raw.leaseClient.leaseTimeToLive({ ID: held[key]![0] })).grantedTTL;
    expect(await granted('job|h')).toBe('2');
    expect(await granted('other|h')).toBe('3');
  });

  it('after etcd drops a lapsed lease, get shows the last owner and expiry with the token kept', async () => {
    const store = await open('/app4/');
    const lease = (await store.tryAcquire('job', 'a', 1000))!;
    await waitFor(
      'etcd to drop the lease',
      async () => !('job|h' in (await keysUnder('/app4/'))),
      4000,
    );
    expect(await store.get('job')).toEqual({
      resource: 'job',
      owner: 'a',
      token: 1,
      expiresAt: lease.expiresAt,
    });
    expect(await store.renew(lease)).toBeNull();
    const taken = (await store.tryAcquire('job', 'b', 1000))!;
    expect(taken).toMatchObject({ token: 2 });
    // Renewed, then lapsed: the renewal's expiry, written after the acquire's, is the one shown.
    const renewed = (await store.renew(taken))!;
    expect(renewed.expiresAt).toBeGreaterThan(taken.expiresAt);
    await waitFor(
      'etcd to drop the lease',
      async () => !('job|h' in (await keysUnder('/app4/'))),
      4000,
    );
    expect(await store.get('job')).toEqual({
      resource: 'job',
      owner: 'b',
      token: 2,
      expiresAt: renewed.expiresAt,
    });
  });

  it('a key its holder stops renewing lapses although the same owner keeps renewing others', async () => {
    const store = await open('/app5/');
    const dropped = (await store.tryAcquire('dropped', 'a', 1000))!;
    let kept = (await store.tryAcquire('kept', 'a', 1000))!;
    expect(dropped).not.toBeNull();
    const started = Date.now();
    let taken: unknown = null;
    while (taken === null && Date.now() - started < 8000) {
      kept = (await store.renew(kept))!;
      expect(kept).not.toBeNull();
      taken = await store.tryAcquire('dropped', 'b', 1000);
      await sleep(200);
    }
    expect(taken).toMatchObject({ owner: 'b', token: 2 });
    expect(await store.get('kept')).toMatchObject({ owner: 'a', token: 1 });
  });

  it('answers batches larger than one transaction, and a lease listed twice, in input order', async () => {
    const store = await open('/app6/', '&maxTxnOps=8');
    const leases = [];
    for (let i = 0; i < 30; i++) leases.push((await store.tryAcquire(`b/${i}`, 'a', 5000))!);
    const renewed = await store.renewMany([...leases, leases[3]!]);
    expect(renewed.map((r) => r?.resource)).toEqual([...leases, leases[3]!].map((l) => l.resource));
    const released = await store.releaseMany([leases[0]!, ...leases, leases[5]!]);
    expect(released).toEqual([true, false, ...Array(29).fill(true), false]);
    expect((await store.list({ prefix: 'b/' })).every((r) => r.owner === '')).toBe(true);
  });

  it("names maxTxnOps when a batch is over the server's --max-txn-ops, and changes nothing", async () => {
    const store = await open('/app10/', '&maxTxnOps=1000');
    const leases = [];
    for (let i = 0; i < 130; i++) leases.push((await store.tryAcquire(`b/${i}`, 'a', 5000))!);
    const error = await rejection(store.releaseMany(leases));
    expect(error.code).toBe('STORE_UNAVAILABLE');
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('maxTxnOps');
    expect((await store.list({ prefix: 'b/' })).every((r) => r.owner === 'a')).toBe(true);
    const fitting = await open('/app10/');
    expect((await fitting.releaseMany(leases)).every(Boolean)).toBe(true);
  });

  it('recognises an acquire the driver sent twice after the first had landed', async () => {
    const keys = new EtcdKeys('/app7/').of('job');
    const lease = await raw.leaseClient.leaseGrant({ TTL: 5 });
    const nonces = new Nonces();
    const nonce = nonces.next();
    expect(nonce).toHaveLength(NONCE_LENGTH);
    const txn = acquireTxn(keys, 'a', lease.ID, Date.now() + 5000, nonce);
    const first = await raw.kv.txn(txn);
    const retried = await raw.kv.txn(txn);
    expect(first.succeeded).toBe(true);
    expect(retried.succeeded).toBe(false);
    expect(acquiredToken(first, keys, 'a', nonce)).toBe(1);
    expect(acquiredToken(retried, keys, 'a', nonce)).toBe(1);
    expect(acquiredToken(retried, keys, 'a', nonces.next())).toBeUndefined();
    expect(acquiredToken(retried, keys, 'b', nonce)).toBeUndefined();
  });

  describe('acquireMany', () => {
    // One acquire is a transaction whose longest list is its 2 puts and the read of its data key;
    // etcd counts an outer transaction of n nested ones as n + 3 operations, so n = maxTxnOps − 3
    // per round trip.
    const txnsFor = (resources: number, maxTxnOps: number): number =>
      Math.ceil(resources / (maxTxnOps - 3));

    it('takes 1,000 resources in ⌈1000 / (maxTxnOps − 3)⌉ transactions and one lease grant', async () => {
      const store = await open('/many1/');
      const names = Array.from({ length: 1000 }, (_, i) => `r/${i}`);
      let outcomes: Awaited<ReturnType<typeof store.acquireMany>> = [];
      const first = await rpcsOf(async () => {
        outcomes = await store.acquireMany(names, 'a', 5000);
      });
      expect(txnsFor(1000, 128)).toBe(8);
      expect(first).toEqual({ Txn: 8, LeaseGrant: 1 });
      expect(outcomes.every((o) => o.lease?.token === 1)).toBe(true);

      // The owner's lease is reused as a single acquire reuses it (with a keep-alive alongside or
      // not, by the time since its grant: see "round trips").
      const more = names.map((n) => `s/${n}`);
      const second = await rpcsOf(() => store.acquireMany(more, 'a', 5000));
      expect(second.Txn).toBe(8);
      expect(second.LeaseGrant).toBeUndefined();
      const holds = Object.entries(await keysUnder('/many1/')).filter(([k]) => k.endsWith('|h'));
      expect(holds).toHaveLength(2000);
      expect(new Set(holds.map(([, [lease]]) => lease)).size).toBe(1);

      // The same work one resource at a time: a transaction per resource.
      const singles = names.slice(0, 100).map((n) => `t/${n}`);
      const one = await rpcsOf(async () => {
        for (const name of singles) await store.tryAcquire(name, 'a', 5000);
      });
      expect(one.Txn).toBe(100);
    });

    it('splits by a smaller maxTxnOps, and answers refused resources with their holder', async () => {
      const store = await open('/many2/', '&maxTxnOps=8');
      const theirs = (await store.tryAcquire('r/7', 'b', 5000))!;
      const names = Array.from({ length: 100 }, (_, i) => `r/${i}`);
      let outcomes: Awaited<ReturnType<typeof store.acquireMany>> = [];
      const rpcs = await rpcsOf(async () => {
        outcomes = await store.acquireMany(names, 'a', 5000);
      });
      expect(rpcs.Txn).toBe(txnsFor(100, 8));
      expect(rpcs.Txn).toBe(20);
      expect(outcomes.map((o) => o.resource)).toEqual(names);
      expect(outcomes.filter((o) => o.lease).length).toBe(99);
      expect(outcomes[7]).toEqual({
        resource: 'r/7',
        lease: null,
        holder: { resource: 'r/7', owner: 'b', token: 1, expiresAt: theirs.expiresAt },
      });
      // A resource the same owner already holds is refused too, and reported as its own.
      const again = await store.acquireMany(['r/0', 'r/100'], 'a', 5000);
      expect(again[0]).toEqual({
        resource: 'r/0',
        lease: null,
        holder: {
          resource: 'r/0',
          owner: 'a',
          token: 1,
          expiresAt: outcomes[0]!.lease!.expiresAt,
        },
      });
      expect(again[1]!.lease).toMatchObject({ owner: 'a', token: 1 });
      expect(again[1]!.holder).toBeUndefined();
    });

    it('after etcd revoked the owner lease it meant to keep alive and reuse, starts once more on a fresh one', async () => {
      const store = await open('/many3/');
      const before = await store.acquireMany(['x/1', 'x/2'], 'a', 5000);
      const lease = (await keysUnder('/many3/'))['x/1|h']![0];
      await raw.leaseClient.leaseRevoke({ ID: lease });
      // Past the second in which the 6 s owner lease outlasts a new 5 s hold unaided, and within
      // the 6 s it serves new work: the next batch sends a keep-alive alongside.
      await sleep(1200);
      expect(await store.get('x/1')).toMatchObject({ owner: 'a', token: 1 });
      let outcomes: Awaited<ReturnType<typeof store.acquireMany>> = [];
      const rpcs = await rpcsOf(async () => {
        outcomes = await store.acquireMany(['x/1', 'x/2', 'x/3'], 'a', 5000);
      });
      expect(outcomes.map((o) => o.lease?.token)).toEqual([2, 2, 1]);
      expect(rpcs).toEqual({ Txn: 2, LeaseKeepAlive: 1, LeaseGrant: 1 });
      const held = await keysUnder('/many3/');
      expect(held['x/1|h']![0]).not.toBe(lease);
      expect(new Set(['x/1|h', 'x/2|h', 'x/3|h'].map((k) => held[k]![0])).size).toBe(1);
      expect(await store.renewMany(before.map((o) => o.lease!))).toEqual([null, null]);
    });
  });

  describe('round trips', () => {
    // A 4,501 ms TTL gets a 6 s owner lease (whole seconds, at least 0.5 s over the TTL): after
    // each grant or keep-alive it outlasts a new hold unaided for almost 1.5 s.
    const ttl = 4501;

    it('an acquire by an owner whose etcd lease is live is one Txn without a keep-alive; a release is one Txn', async () => {
      const store = await open('/rt1/');
      expect(await rpcsOf(() => store.tryAcquire('r/1', 'a', ttl))).toEqual({
        LeaseGrant: 1,
        Txn: 1,
      });
      // The owner lease granted just now outlasts a new hold: nothing but the Txn.
      let lease: Awaited<ReturnType<typeof store.tryAcquire>> = null;
      const acquired = await rpcsOf(async () => {
        lease = await store.tryAcquire('r/2', 'a', ttl);
      });
      expect(acquired).toEqual({ Txn: 1 });
      expect(lease).toMatchObject({ owner: 'a', token: 1 });
      expect(await rpcsOf(() => store.release(lease!))).toEqual({ Txn: 1 });
      const refused = await rpcsOf(() => store.tryAcquire('r/1', 'b', ttl));
      expect(refused).toEqual({ LeaseGrant: 1, Txn: 1 });
    });

    it('an owner lease that no longer outlasts a new hold gets a keep-alive beside the acquire, then serves acquires alone again', async () => {
      const store = await open('/rt2/');
      await store.tryAcquire('r/1', 'a', ttl);
      await sleep(1700); // the owner lease has 4.3 s left: less than a new hold needs
      expect(await rpcsOf(() => store.tryAcquire('r/2', 'a', ttl))).toEqual({
        Txn: 1,
        LeaseKeepAlive: 1,
      });
      expect(await rpcsOf(() => store.tryAcquire('r/3', 'a', ttl))).toEqual({ Txn: 1 });
      // A renewal keeps the owner lease alive: that keep-alive is the heartbeat's.
      await sleep(1700);
      const lease = (await store.get('r/1'))!;
      expect(await rpcsOf(() => store.renew({ ...lease, ttlMs: ttl }))).toEqual({
        Txn: 1,
        LeaseKeepAlive: 1,
      });
      expect(await rpcsOf(() => store.tryAcquire('r/4', 'a', ttl))).toEqual({ Txn: 1 });
    });

    it('renewMany of 1,000 is one keep-alive and ⌈1000 / (maxTxnOps − 3)⌉ Txns; releaseMany ⌈1000 / (maxTxnOps − 2)⌉', async () => {
      const store = await open('/rt3/');
      const names = Array.from({ length: 1000 }, (_, i) => `r/${i}`);
      const leases = (await store.acquireMany(names, 'a', 5000)).map((o) => o.lease!);
      // A renewal compares token and holder (2) and runs 2 operations, one of them a nested
      // transaction of 1 compare and 1 put that moves the hold key: etcd counts 2 + 1. An outer
      // transaction of n of them needs n + 3 operations, so 125 fit under the default 128.
      const keys = new EtcdKeys('/rt3/').of('r/0');
      expect(opsNeeded(renewTxn(keys, leases[0]!, '1', 0))).toBe(3);
      expect(opsNeeded(releaseTxn(keys, leases[0]!))).toBe(2);
      let renewed: Awaited<ReturnType<typeof store.renewMany>> = [];
      const renewing = await rpcsOf(async () => {
        renewed = await store.renewMany(leases);
      });
      expect(renewing).toEqual({ LeaseKeepAlive: 1, Txn: Math.ceil(1000 / 125) });
      expect(renewed.every((l) => l !== null)).toBe(true);
      const releasing = await rpcsOf(() => store.releaseMany(renewed.map((l) => l!)));
      expect(releasing).toEqual({ Txn: Math.ceil(1000 / 126) });
    });
  });

  describe('an acquire on an owner lease near its end or revoked', () => {
    it('near its end: the acquire keeps the lease alive alongside, and etcd keeps the hold past what the holder believes', async () => {
      const store = await open('/edge1/');
      // A 3 s TTL gets a 4 s owner lease; 2.5 s after its grant it has 1.5 s left, and it still
      // serves new work (for 4 s). Without a keep-alive etcd would drop a new hold about 2 s
      // before its holder stopped believing in it.
      await store.tryAcquire('first', 'a', 3000);
      await sleep(2500);
      let tSent = 0;
      let lease: Awaited<ReturnType<typeof store.tryAcquire>> = null;
      const rpcs = await rpcsOf(async () => {
        tSent = performance.now();
        lease = await store.tryAcquire('second', 'a', 3000);
      });
      expect(rpcs).toEqual({ Txn: 1, LeaseKeepAlive: 1 });
      const believedUntil = validUntil(tSent, lease!.ttlMs, store.maxClockSkewMs);
      expect(await lastSeenHeld('/edge1/', 'second')).toBeGreaterThanOrEqual(believedUntil);
    });

    it('revoked: etcd refuses the put, and the acquire is made once more on a fresh lease that outlasts the holder', async () => {
      const store = await open('/edge2/');
      await store.tryAcquire('first', 'a', 3501);
      const revoked = (await keysUnder('/edge2/'))['first|h']![0];
      await raw.leaseClient.leaseRevoke({ ID: revoked });
      let tSent = 0;
      let lease: Awaited<ReturnType<typeof store.tryAcquire>> = null;
      const rpcs = await rpcsOf(async () => {
        tSent = performance.now();
        lease = await store.tryAcquire('second', 'a', 3501);
      });
      // The store still counted on the lease (granted moments ago, 5 s for a 3,501 ms TTL): the
      // Txn alone, refused by etcd, then a fresh lease and the Txn once more.
      expect(rpcs).toEqual({ Txn: 2, LeaseGrant: 1 });
      expect(lease).toMatchObject({ owner: 'a', token: 1, ttlMs: 3501 });
      expect((await keysUnder('/edge2/'))['second|h']![0]).not.toBe(revoked);
      const believedUntil = validUntil(tSent, lease!.ttlMs, store.maxClockSkewMs);
      expect(await lastSeenHeld('/edge2/', 'second')).toBeGreaterThanOrEqual(believedUntil);
      expect(await store.tryAcquire('second', 'b', 3501)).toMatchObject({ token: 2 });
    });
  });

  it('lists after a resource in code-point order, reading only from there', async () => {
    const store = await open('/after1/');
    const names = ['b', '\u{10000}', '\ue000', '\uffff', 'b/x', 'ba'];
    const before = Array.from({ length: 1000 }, (_, i) => `a/${String(i).padStart(3, '0')}`);
    await store.acquireMany([...before, ...names], 'a', 5000);
    const all = (await store.list({ after: 'a/999' })).map((r) => r.resource);
    expect(all).toEqual(['b', 'b/x', 'ba', '\ue000', '\uffff', '\u{10000}']);
    expect((await store.list({ after: '\uffff' })).map((r) => r.resource)).toEqual(['\u{10000}']);
    expect((await store.list({ after: 'b' })).map((r) => r.resource)).toEqual(all.slice(1));
    expect((await store.list({ prefix: 'b', after: 'b/x', limit: 1 }))[0]!.resource).toBe('ba');
    expect(await store.list({ prefix: 'b', after: 'c' })).toEqual([]);
    expect((await store.list({ prefix: 'a/', after: 'a/997' })).map((r) => r.resource)).toEqual([
      'a/998',
      'a/999',
    ]);
    // The 3,000 keys of the resources before `after` are not read: one short range is the page.
    const rpcs = await rpcsOf(() => store.list({ after: 'a/999', limit: 5 }));
    expect(rpcs).toEqual({ Range: 1 });
  });

  it('uses an Etcd3 client it was given and leaves it open', async () => {
    const client = new Etcd3({ hosts: `http://${etcd.members[0]!.endpoint}` });
    try {
      const store = await EtcdStore.open(client, { prefix: '/app9/' });
      expect(await store.tryAcquire('job', 'a', 5000)).toMatchObject({ token: 1 });
      await store.close();
      expect(await client.get('/app9/job\0h').string()).toBe('a'); // the client still works
      const error = await rejection(store.get('job'));
      expect(error.code).toBe('STORE_UNAVAILABLE');
    } finally {
      client.close();
    }
  });
});
