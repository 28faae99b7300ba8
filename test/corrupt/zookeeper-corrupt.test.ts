import { createRequire } from 'node:module';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ErrorCode, type Lease, type LeaseStore } from '../../src/index.js';
import { parseStoreUrl } from '../../src/core/store-url.js';
import { openZookeeper } from '../../src/stores/zookeeper/open.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';
import { ZookeeperServer, zookeeperUnavailable } from '../harness/zookeeper-server.js';

/** The part of a `node-zookeeper-client` client this file writes znodes by hand with. */
interface RawClient {
  connect(): void;
  close(): void;
  on(event: 'connected', listener: () => void): void;
  create(path: string, data: Buffer, mode: number, cb: (e: Error | null) => void): void;
  setData(path: string, data: Buffer, version: number, cb: (e: Error | null) => void): void;
  getData(
    path: string,
    cb: (e: Error | null, data?: Buffer, stat?: { version: number }) => void,
  ): void;
  exists(path: string, cb: (e: Error | null, stat?: { version: number } | null) => void): void;
}

/** Record znode data written by hand: not a record at all, or a record with a bad field. */
const RECORDS: Readonly<Record<string, Buffer>> = {
  'not-json': Buffer.from([0xff, 0x00, 0x7b]),
  empty: Buffer.alloc(0),
  'json-array': Buffer.from('[1,2]'),
  'no-owner': Buffer.from('{"t":60000}'),
  'owner-number': Buffer.from('{"o":7,"t":60000}'),
  'owner-huge': Buffer.from(JSON.stringify({ o: 'o'.repeat(1000), t: 60000 })),
  'no-ttl': Buffer.from('{"o":"h"}'),
  'ttl-string': Buffer.from('{"o":"h","t":"60000"}'),
  'ttl-negative': Buffer.from('{"o":"h","t":-5}'),
  'ttl-fraction': Buffer.from('{"o":"h","t":2.5}'),
  'ttl-huge': Buffer.from('{"o":"h","t":1e300}'),
};
const NAMES = Object.keys(RECORDS);

describeServer('zookeeper store: corrupt records', zookeeperUnavailable(), () => {
  let server: ZookeeperServer;
  /** The store under test. */
  let store: LeaseStore;
  /** Another process's store: the holder of leases whose records are then broken by hand. */
  let holder: LeaseStore;
  let raw: RawClient;
  const chroot = '/zcorrupt';
  const zk = createRequire(import.meta.url)('node-zookeeper-client') as {
    createClient(hosts: string, options: object): RawClient;
    CreateMode: { PERSISTENT: number };
  };
  const record = (resource: string): string => `${chroot}/r/${resource}`;
  const call = <T>(work: (cb: (e: Error | null, value?: T) => void) => void): Promise<T> =>
    new Promise((resolve, reject) => work((e, value) => (e ? reject(e) : resolve(value as T))));
  const create = (path: string, data: Buffer) =>
    call((cb) => raw.create(path, data, zk.CreateMode.PERSISTENT, cb));
  const setData = (path: string, data: Buffer) => call((cb) => raw.setData(path, data, -1, cb));
  const bytes = (path: string) => call<Buffer>((cb) => raw.getData(path, cb));
  const exists = (path: string) =>
    call<{ version: number } | null>((cb) => raw.exists(path, (e, stat) => cb(e, stat ?? null)));
  const invalid = async (work: Promise<unknown>) =>
    expect((await rejection(work)).code).toBe(ErrorCode.RECORD_INVALID);

  beforeAll(async () => {
    server = await ZookeeperServer.start();
    const url = `${server.url}${chroot}?timeoutMs=3000`;
    store = await openZookeeper(parseStoreUrl(url));
    holder = await openZookeeper(parseStoreUrl(url));
    raw = zk.createClient(server.endpoint, { sessionTimeout: 10_000, spinDelay: 100, retries: 0 });
    await new Promise<void>((resolve) => {
      raw.on('connected', resolve);
      raw.connect();
    });
  }, 30_000);
  afterAll(async () => {
    raw?.close();
    await Promise.allSettled([store?.close(), holder?.close()]);
    await server?.stop();
  });

  it('a record znode made by hand without its token znode: RECORD_INVALID, nothing applied', async () => {
    for (const name of NAMES) {
      const resource = `bare-${name}`;
      await create(record(resource), RECORDS[name]!);
      await invalid(store.get(resource));
      // The acquire's multi counts the token on a znode that is not there: refused whole.
      await invalid(store.tryAcquire(resource, 'thief', 5000));
      expect(await bytes(record(resource))).toEqual(RECORDS[name]);
      expect(await exists(`${record(resource)}/h`)).toBeNull();
    }
    await invalid(store.acquireMany(['bare-ok', 'bare-empty'], 'thief', 5000));
    await invalid(store.acquireAll(['bare-ok2', 'bare-empty'], 'thief', 5000));
    expect(await store.get('bare-ok2')).toBeNull(); // the group's multi applied nothing
    await invalid(store.list({ prefix: 'bare-' }));
  });

  it('a held lease whose record is overwritten by hand: every call answers RECORD_INVALID or "not ours", nothing overwritten', async () => {
    const leases = new Map<string, Lease>();
    for (const name of NAMES) leases.set(name, (await holder.tryAcquire(name, 'h', 60_000))!);
    const kept = (await holder.tryAcquire('kept', 'h', 60_000))!;
    for (const name of NAMES) await setData(record(name), RECORDS[name]!);
    for (const name of NAMES) {
      await invalid(store.get(name));
      await invalid(store.tryAcquire(name, 'thief', 5000));
      await invalid(store.acquireFirst([name, `first-${name}`], 'thief', 5000));
      const lease = leases.get(name)!;
      expect(notOurs(await holder.renew(lease).catch(codeOf))).toBe(true);
      expect(notOurs(await holder.release(lease).catch(codeOf))).toBe(true);
      expect(await bytes(record(name))).toEqual(RECORDS[name]);
    }
    // Batches meet the corrupt record in their reads and fail as a whole.
    await invalid(store.acquireMany(['healthy', 'not-json'], 'thief', 5000));
    await invalid(store.acquireAll(['healthy-2', 'ttl-huge'], 'thief', 5000));
    await invalid(store.list());
    const renewed = await holder.renewMany([leases.get('empty')!, kept]).catch(codeOf);
    if (Array.isArray(renewed)) expect(renewed).toEqual([null, expect.objectContaining(kept)]);
    else expect(renewed).toBe(ErrorCode.RECORD_INVALID);
    const released = await holder.releaseMany([leases.get('no-ttl')!, kept]).catch(codeOf);
    if (Array.isArray(released)) expect(released).toEqual([false, true]);
    else expect(released).toBe(ErrorCode.RECORD_INVALID);
    for (const name of NAMES) {
      expect(await bytes(record(name))).toEqual(RECORDS[name]);
      expect(await exists(`${record(name)}/h`)).not.toBeNull(); // the holder's hold stands
    }
  });

  it('a token znode written by hand reads as RECORD_INVALID', async () => {
    // Created by hand, never counted (version 0), beside a record made by hand.
    await create(record('token-zero'), Buffer.from('{"o":"h","t":60000}'));
    await create(`${record('token-zero')}/t`, Buffer.alloc(0));
    await invalid(store.get('token-zero'));
    // Bytes in a token znode of a held lease (leasehold writes none there).
    await holder.tryAcquire('token-bytes', 'h', 60_000);
    await setData(`${record('token-bytes')}/t`, Buffer.from('not a token'));
    await invalid(store.get('token-bytes'));
    await invalid(store.tryAcquire('token-bytes', 'thief', 5000));
    expect((await bytes(`${record('token-bytes')}/t`)).toString()).toBe('not a token');
  });

  it('left as it was: a record broken while no hold stands is granted over by the one-multi acquire, its token still above every token before', async () => {
    // The free path's multi creates the hold and counts the token without reading the record
    // (one round trip); the token is the token znode's version, which no hand write lowers.
    const before = (await holder.tryAcquire('released', 'h', 60_000))!;
    await holder.release(before);
    await setData(record('released'), RECORDS['not-json']!);
    await invalid(store.get('released'));
    const lease = (await store.tryAcquire('released', 'a', 5000))!;
    expect(lease.token).toBeGreaterThan(before.token);
    await store.release(lease);
  });
});

function codeOf(error: unknown): string {
  return (error as { code?: string }).code ?? String(error);
}

function notOurs(answer: unknown): boolean {
  return answer === null || answer === false || answer === ErrorCode.RECORD_INVALID;
}
