import { Etcd3 } from 'etcd3';
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import { LIMITS, openStore, type Lease, type LeaseStore } from '../../src/index.js';
import type { EtcdStore } from '../../src/stores/etcd/index.js';
import { EtcdKeys } from '../../src/stores/etcd/etcd-keys.js';
import { encodeToken } from '../../src/stores/etcd/etcd-record.js';
import { renewTxn } from '../../src/stores/etcd/etcd-ops.js';
import { Nonces } from '../../src/stores/etcd/etcd-nonce.js';
import { EtcdRpc } from '../../src/stores/etcd/etcd-rpc.js';
import type { EtcdTxnRequest } from '../../src/stores/etcd/etcd-driver.js';
import { EtcdCluster, etcdUnavailable } from '../harness/etcd-server.js';
import { rpcCounter } from '../harness/etcd-rpcs.js';
import { describeServer } from '../harness/describe-server.js';
import { sleep } from '../harness/expect-error.js';

/** A string of exactly `n` UTF-8 bytes, mostly 3-byte characters. */
const utf8Of = (n: number): string => '€'.repeat(Math.floor(n / 3)) + 'x'.repeat(n % 3);
const bytesOf = (n: number): Uint8Array => new Uint8Array(n).map((_, i) => (i * 7) % 256);

describeServer('etcd store: lease data', etcdUnavailable(), () => {
  let etcd: EtcdCluster;
  let raw: Etcd3;
  let n = 0;
  const opened: LeaseStore[] = [];
  const open = async (prefix: string): Promise<EtcdStore> => {
    const store = await openStore(`${etcd.url}?prefix=${prefix}&timeoutMs=3000`);
    opened.push(store);
    return store as EtcdStore;
  };
  const fresh = (): string => `/d${++n}/`;
  const rpcsOf = rpcCounter(() => etcd.members[0]!.endpoint);
  /** A counter of the member's /metrics: bytes it received from clients, bytes it logged. */
  const metric = async (name: string): Promise<number> => {
    const text = await (await fetch(`http://${etcd.members[0]!.endpoint}/metrics`)).text();
    return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)![1]);
  };
  const bytesOfWork = async (
    work: () => Promise<unknown>,
  ): Promise<{ received: number; logged: number }> => {
    const received = await metric('etcd_network_client_grpc_received_bytes_total');
    const logged = await metric('etcd_disk_wal_write_bytes_total');
    await work();
    return {
      received: (await metric('etcd_network_client_grpc_received_bytes_total')) - received,
      logged: (await metric('etcd_disk_wal_write_bytes_total')) - logged,
    };
  };
  /** The data key of `resource` under `prefix`: its version and mod revision, or undefined. */
  const dataKey = async (prefix: string, resource: string): Promise<string | undefined> => {
    const { kvs } = await raw.kv.range({ key: Buffer.from(`${prefix}${resource}\0d`) });
    return kvs[0] && `${kvs[0].version}@${kvs[0].mod_revision}:${kvs[0].lease}`;
  };
  /** Makes the owner's etcd lease freshly kept alive, so what is counted next is the Txn alone. */
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

  it('declares lease data; writeData, renew and release with data are one Txn each, on a data key of its own', async () => {
    const prefix = fresh();
    const store = await open(prefix);
    expect(store.capabilities.data).toBe(true);
    let lease = (await store.tryAcquire('job', 'a', 5000))!;
    expect(lease.data).toBeUndefined();
    expect(await dataKey(prefix, 'job')).toBeUndefined();
    expect(await rpcsOf(() => store.writeData(lease, 'w1'))).toEqual({ Txn: 1 });
    // The data key is on no etcd lease, and only it was written.
    expect(await dataKey(prefix, 'job')).toMatch(/^1@\d+:0$/);
    expect(await raw.get(`${prefix}job\0d`).string()).toBe('sw1');
    // A renewal keeps the owner's etcd lease alive beside its Txn: with data, exactly the same.
    const plain = await rpcsOf(async () => (lease = (await store.renew(lease, 5000))!));
    expect(plain).toEqual({ Txn: 1, LeaseKeepAlive: 1 });
    let renewed: Lease | null = null;
    expect(await rpcsOf(async () => (renewed = await store.renew(lease, 5000, 'r1')))).toEqual(
      plain,
    );
    lease = renewed!;
    expect(lease).toMatchObject({ token: 1, data: 'r1' });
    expect(await store.get('job')).toMatchObject({ owner: 'a', token: 1, data: 'r1' });
    expect(await rpcsOf(() => store.release(lease, new Uint8Array([1, 2])))).toEqual({ Txn: 1 });
    expect(await store.get('job')).toEqual({
      resource: 'job',
      owner: '',
      token: 1,
      expiresAt: 0,
      data: new Uint8Array([1, 2]),
    });
    // null clears it: the data key is kept, empty (never deleted, so its revision only grows),
    // and the record reads without data again.
    const next = (await store.tryAcquire('job', 'b', 5000))!;
    expect(next.data).toEqual(new Uint8Array([1, 2]));
    expect(await rpcsOf(() => store.writeData(next, null))).toEqual({ Txn: 1 });
    expect(await dataKey(prefix, 'job')).toMatch(/^4@\d+:0$/);
    expect((await raw.get(`${prefix}job\0d`).buffer())?.length).toBe(0);
    expect(await store.get('job')).not.toHaveProperty('data');
    await store.release(next);
    expect((await store.tryAcquire('job', 'c', 5000))!).not.toHaveProperty('data');
  });

  it('every grant after a release or an expiry hands the data over in its one Txn', async () => {
    const store = await open(fresh());
    const names = ['a/1', 'a/2', 'a/3'];
    const first = (await store.acquireMany(names, 'a', 1000)).map((o) => o.lease!);
    for (const [i, lease] of first.entries()) await store.writeData(lease, `v${i}`);
    await store.release(first[0]!, 'released');
    // a/2 and a/3 lapse (etcd drops their hold keys with the owner lease).
    await sleep(1000 + store.expiryLagMs + 500);
    await warm(store, 'b');
    let got: Lease | null = null;
    expect(await rpcsOf(async () => (got = await store.tryAcquire('a/1', 'b', 5000)))).toEqual({
      Txn: 1,
    });
    expect(got).toMatchObject({ owner: 'b', token: 2, data: 'released' });
    let taken: Lease[] | null = null;
    expect(
      await rpcsOf(async () => (taken = await store.acquireAll(['a/3', 'a/2'], 'b', 5000))),
    ).toEqual({ Txn: 1 });
    expect(taken!.map((l) => [l.resource, l.token, l.data])).toEqual([
      ['a/3', 2, 'v2'],
      ['a/2', 2, 'v1'],
    ]);
    await store.releaseMany([got!, ...taken!]);
    let many: Awaited<ReturnType<typeof store.acquireMany>> = [];
    expect(
      await rpcsOf(async () => (many = await store.acquireMany(['a/2', 'a/new'], 'b', 5000))),
    ).toEqual({ Txn: 1 });
    expect(many.map((o) => o.lease?.data ?? null)).toEqual(['v1', null]);
    // A holder that stands in the way is reported with its data.
    const refused = await store.acquireMany(['a/2'], 'c', 5000);
    expect(refused[0]!.holder).toMatchObject({ owner: 'b', data: 'v1' });
    await store.releaseMany(many.map((o) => o.lease!));
    expect(
      await rpcsOf(async () => (got = await store.acquireFirst(['a/new', 'a/3'], 'b', 5000))),
    ).toEqual({ Txn: 1 });
    expect(got).toMatchObject({ resource: 'a/new' });
    expect(got).not.toHaveProperty('data');
    expect(await store.acquireFirst(['a/new', 'a/3'], 'b', 5000)).toMatchObject({
      resource: 'a/3',
      data: 'v2',
    });
  });

  it('renewMany without data neither sends nor rewrites the data key: 4 KiB of data each costs nothing', async () => {
    const prefix = fresh();
    const store = await open(prefix);
    // The renewal transaction names the hold and record keys alone.
    const keys = new EtcdKeys(prefix).of('x');
    const lease = { resource: 'x', owner: 'a', token: 1 };
    const sent = JSON.stringify(renewTxn(keys, lease, '1', 0), (_, v: unknown) =>
      v && typeof v === 'object' && (v as { type?: string }).type === 'Buffer'
        ? Buffer.from((v as { data: number[] }).data).toString('latin1')
        : v,
    );
    expect(sent).not.toContain(keys.data.toString('latin1'));

    const count = 500;
    const plain = (await store.acquireMany(names('plain', count), 'a', 5000)).map((o) => o.lease!);
    const loaded = (await store.acquireMany(names('full', count), 'a', 5000)).map((o) => o.lease!);
    const big = utf8Of(LIMITS.dataMaxBytes);
    await Promise.all(loaded.map((l) => store.writeData(l, big)));
    const before = await Promise.all(loaded.map((l) => dataKey(prefix, l.resource)));
    await store.renewMany(plain); // the owner lease's keep-alive is out of the way for both
    const without = await bytesOfWork(() => store.renewMany(plain));
    const withData = await bytesOfWork(async () => {
      const renewed = await store.renewMany(loaded);
      expect(renewed.every((l) => l !== null)).toBe(true);
    });
    // The same requests (names of the same length), whatever the records hold: 2 MB of data
    // would show in both counters.
    const slack = 64 * 1024;
    expect(withData.received).toBeLessThan(without.received + slack);
    expect(withData.logged).toBeLessThan(without.logged + slack);
    expect(withData.received).toBeLessThan((count * LIMITS.dataMaxBytes) / 8);
    expect(await Promise.all(loaded.map((l) => dataKey(prefix, l.resource)))).toEqual(before);
    expect((await store.get(loaded[0]!.resource))?.data).toBe(big);
    // renew without data, and releaseMany, leave it too.
    await store.renew(loaded[0]!);
    await store.releaseMany(loaded);
    expect(await Promise.all(loaded.map((l) => dataKey(prefix, l.resource)))).toEqual(before);
  });

  it('a value of exactly LIMITS.dataMaxBytes round-trips exactly, as multi-byte UTF-8 and as bytes', async () => {
    const prefix = fresh();
    const store = await open(prefix);
    const text = utf8Of(LIMITS.dataMaxBytes);
    expect(Buffer.byteLength(text)).toBe(LIMITS.dataMaxBytes);
    const bytes = bytesOf(LIMITS.dataMaxBytes);
    const lease = (await store.tryAcquire('t', 'a', 5000))!;
    expect(await store.writeData(lease, text)).toBe(true);
    // Kept in etcd's own bytes: one type byte, then the UTF-8 (no base64).
    const { kvs } = await raw.kv.range({ key: Buffer.from(`${prefix}t\0d`) });
    expect(kvs[0]!.value.length).toBe(1 + LIMITS.dataMaxBytes);
    expect((await store.get('t'))?.data).toBe(text);
    expect(await store.release(lease, bytes)).toBe(true);
    const [listed] = await store.list({ prefix: 't' });
    expect(listed?.data).toEqual(bytes);
    expect(listed?.data).toBeInstanceOf(Uint8Array);
    const next = (await store.tryAcquire('t', 'b', 5000))!;
    expect(next.data).toEqual(bytes);
    expect(Buffer.from(next.data as Uint8Array).equals(Buffer.from(bytes))).toBe(true);
    const renewed = (await store.renew(next, undefined, text))!;
    expect(renewed.data).toBe(text);
    expect((await store.get('t'))?.data).toBe(text);
  });

  it("lists records carrying the data limit each, although 3000 keys of them are over gRPC's 4 MiB answer limit", async () => {
    const store = await open(fresh());
    const count = 1200; // 1200 × 4 KiB of data: about 5 MB in the 3000 keys of a full page
    const leases = (await store.acquireMany(names('big', count), 'a', 60_000)).map((o) => o.lease!);
    const big = utf8Of(LIMITS.dataMaxBytes);
    for (let i = 0; i < count; i += 100) {
      const written = await Promise.all(
        leases.slice(i, i + 100).map((l) => store.writeData(l, big)),
      );
      expect(written.every(Boolean)).toBe(true);
    }
    for (let round = 0; round < 2; round++) {
      const listed = await store.list({ prefix: 'big/', limit: 2000 });
      expect(listed.map((r) => r.resource)).toEqual(names('big', count));
      expect(listed.every((r) => r.data === big && r.owner === 'a')).toBe(true);
    }
    expect(await store.list({ prefix: 'big/', after: 'big/0599', limit: 2 })).toMatchObject([
      { resource: 'big/0600', data: big },
      { resource: 'big/0601', data: big },
    ]);
  });

  /** Records every transaction the store sends from now on (sent as usual). */
  const recordTxns = (): EtcdTxnRequest[] => {
    const sent: EtcdTxnRequest[] = [];
    const send = EtcdRpc.prototype.txn;
    vi.spyOn(EtcdRpc.prototype, 'txn').mockImplementation(function (this: EtcdRpc, request) {
      sent.push(request);
      return send.call(this, request);
    });
    return sent;
  };
  afterEach(() => vi.restoreAllMocks());

  it('a late copy of an earlier data write, applied after later ones, is refused: the data never goes back', async () => {
    // etcd can apply a write after answering it with an error (a proposal held up on a link to a
    // leader that was cut off, a driver retry): a copy sent again later stands for that.
    const prefix = fresh();
    const store = await open(prefix);
    const sent = recordTxns();
    const lease = (await store.tryAcquire('late', 'a', 5000))!;
    expect(await store.writeData(lease, 'n1')).toBe(true); // the first write: no data key yet
    const first = sent.at(-1)!;
    const renewed = (await store.renew(lease, 5000, 'n2'))!;
    const renewal = sent.at(-1)!;
    expect(await store.writeData(renewed, 'n3')).toBe(true);
    for (const copy of [first, renewal]) {
      expect((await raw.kv.txn(copy)).succeeded).toBe(false);
      expect((await store.get('late'))?.data).toBe('n3');
    }
    // Cleared and written again: an early copy made when there was no data key still finds one.
    expect(await store.writeData(renewed, null)).toBe(true);
    expect((await raw.kv.txn(first)).succeeded).toBe(false);
    expect(await store.get('late')).not.toHaveProperty('data');
    // The next holder is handed the last value written, not a copy's.
    expect(await store.release(renewed, 'n4')).toBe(true);
    expect((await raw.kv.txn(renewal)).succeeded).toBe(false);
    expect((await store.tryAcquire('late', 'b', 5000))!).toMatchObject({ token: 2, data: 'n4' });
  });

  it('a write answered as failed that landed after all costs the next write one more Txn, never the value', async () => {
    const store = await open(fresh());
    const lease = (await store.tryAcquire('lost', 'a', 5000))!;
    expect(await store.writeData(lease, 'v1')).toBe(true);
    // The next write's answer is lost: the store says it failed, but etcd applies it later.
    const sent = recordTxns();
    vi.mocked(EtcdRpc.prototype.txn).mockImplementationOnce(function (this: EtcdRpc, request) {
      sent.push(request);
      return Promise.reject(new Error('the answer was lost'));
    });
    await expect(store.writeData(lease, 'v2')).rejects.toThrow('the answer was lost');
    expect((await raw.kv.txn(sent.at(-1)!)).succeeded).toBe(true); // it lands now
    expect((await store.get('lost'))?.data).toBe('v2');
    // The holder writes again: the first try finds the data key moved, reads where it is, and
    // the second lands. The landed copy of v2 never comes back over v3.
    const before = sent.length;
    expect(await store.writeData(lease, 'v3')).toBe(true);
    expect(sent.length - before).toBe(2);
    expect((await store.get('lost'))?.data).toBe('v3');
    expect((await raw.kv.txn(sent[before - 1]!)).succeeded).toBe(false);
    // The revision is now known again: one Txn a write.
    expect(await store.writeData(lease, 'v4')).toBe(true);
    expect(sent.length - before).toBe(3);
    // A lost lease still answers false, after one try, not a retry.
    expect(await store.release(lease)).toBe(true);
    expect(await store.writeData(lease, 'v5')).toBe(false);
    expect(sent.length - before).toBe(5);
    expect((await store.get('lost'))?.data).toBe('v4');
  });

  it('grants of every kind know where the data key is: the first write after each is one Txn', async () => {
    const store = await open(fresh());
    for (const name of ['g0', 'g1', 'g1b', 'g2', 'g2b', 'g3', 'g3b']) {
      const lease = (await store.tryAcquire(name, 'seed', 5000))!;
      expect(await store.release(lease, `${name} data`)).toBe(true);
    }
    const sent = recordTxns();
    const single = (await store.tryAcquire('g0', 'a', 5000))!;
    const many = await store.acquireMany(['g1', 'g1b'], 'a', 5000);
    const group = (await store.acquireAll(['g2', 'g2b'], 'a', 5000))!;
    const first = (await store.acquireFirst(['g3', 'g3b'], 'a', 5000))!;
    expect(first.resource).toBe('g3');
    for (const lease of [single, ...many.map((o) => o.lease!), ...group, first]) {
      expect(lease.data).toBe(`${lease.resource} data`);
      const before = sent.length;
      expect(await store.writeData(lease, `${lease.resource} new`)).toBe(true);
      expect(sent.length - before).toBe(1);
    }
  });

  it("a paused ex-holder's writes after the takeover are refused, leaving the data as it was", async () => {
    const store = await open(fresh());
    const old = (await store.tryAcquire('p', 'a', 1000))!;
    expect(await store.writeData(old, 'a1')).toBe(true);
    // The holder pauses past its lease; etcd drops the hold key and b takes the record over.
    await sleep(1000 + store.expiryLagMs + 500);
    const next = (await store.tryAcquire('p', 'b', 5000))!;
    expect(next).toMatchObject({ token: 2, data: 'a1' });
    expect(await store.writeData(old, 'late')).toBe(false);
    expect(await store.renew(old, undefined, 'late renew')).toBeNull();
    expect(await store.release(old, 'late release')).toBe(false);
    expect(await store.get('p')).toMatchObject({ owner: 'b', token: 2, data: 'a1' });
    expect(await store.writeData(next, 'b1')).toBe(true);
    expect((await store.get('p'))?.data).toBe('b1');
  });

  it('records written before lease data existed read without data, and take every transition', async () => {
    const prefix = fresh();
    const keys = new EtcdKeys(prefix);
    const nonces = new Nonces();
    const lease = await raw.leaseClient.leaseGrant({ TTL: 10 });
    const expiresAt = Date.now() + 5000;
    // The current release's layout, written with the driver: a held record ('held': hold key on
    // an etcd lease, token key with the nonce and record), a renewed one (its record key), a
    // released one (empty hold key), and one of the earlier layout (a bare 16-byte nonce).
    const put = (key: Buffer, value: Buffer | string, onLease = false) =>
      raw.kv.put({ key, value: Buffer.from(value), lease: onLease ? lease.ID : '0' });
    const held = keys.of('held');
    await put(held.hold, 'a', true);
    await put(held.token, encodeToken(nonces.next(), 'a', expiresAt));
    const renewed = keys.of('renewed');
    await put(renewed.hold, 'a', true);
    await put(renewed.token, encodeToken(nonces.next(), 'a', expiresAt - 1000));
    await put(renewed.record, `{"owner":"a","expiresAt":${expiresAt}}`);
    const released = keys.of('released');
    await put(released.token, encodeToken(nonces.next(), 'a', expiresAt));
    await put(released.hold, '');
    const earlier = keys.of('earlier');
    await put(earlier.token, Buffer.alloc(16, 7));
    await put(earlier.record, '{"owner":"","expiresAt":0}');
    await put(earlier.hold, '');

    const store = await open(prefix);
    const records = await store.list();
    expect(records).toEqual([
      { resource: 'earlier', owner: '', token: 1, expiresAt: 0 },
      { resource: 'held', owner: 'a', token: 1, expiresAt },
      { resource: 'released', owner: '', token: 1, expiresAt: 0 },
      { resource: 'renewed', owner: 'a', token: 1, expiresAt },
    ]);
    for (const record of records) expect(record).not.toHaveProperty('data');
    // The old holder goes on: renew, write data, renew with data, release with data.
    const ttlMs = 5000;
    for (const resource of ['held', 'renewed']) {
      const mine = (await store.renew({ resource, owner: 'a', token: 1, expiresAt, ttlMs }))!;
      expect(mine).toMatchObject({ token: 1 });
      expect(await store.writeData(mine, `${resource} 1`)).toBe(true);
      const again = (await store.renew(mine, undefined, `${resource} 2`))!;
      expect(await store.release(again, `${resource} 3`)).toBe(true);
    }
    // New holders take them over, old released ones included, and are handed the data.
    const got = await store.acquireMany(['earlier', 'held', 'released', 'renewed'], 'b', ttlMs);
    expect(got.map((o) => [o.lease?.token, o.lease?.data ?? null])).toEqual([
      [2, null],
      [2, 'held 3'],
      [2, null],
      [2, 'renewed 3'],
    ]);
    expect(await store.writeData(got[0]!.lease!, 'earlier 1')).toBe(true);
    expect((await store.get('earlier'))?.data).toBe('earlier 1');
  });
});

function names(base: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${base}/${String(i).padStart(4, '0')}`);
}
