import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore, type Lease, type LeaseStore } from '../../src/index.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';
import { EtcdCluster, etcdUnavailable } from '../harness/etcd-server.js';

/**
 * Keys of a lease written by hand (or by another program) in an etcd namespace. In etcd the
 * token is the token key's version and "free" is the hold key being on no etcd lease: no value
 * decides either. What a value holds is checked wherever it is read: `get` and `list`, and an
 * acquire refused by a live hold (tryAcquire, acquireMany, acquireAll), which then answers
 * RECORD_INVALID instead of naming a holder; the keys are left as they were. acquireMany fails as
 * a whole, giving back what it granted meanwhile; renew / release answer "not ours".
 */

const NONCE = 'n'.repeat(32);
const json = (value: unknown): string => NONCE + JSON.stringify(value);

/** Each form: which key it writes (and how), and a word its RECORD_INVALID message contains. */
type Spoil = (raw: Etcd3, key: (kind: string) => string) => Promise<unknown>;
const put =
  (kind: string, value: string): Spoil =>
  (raw, key) =>
    raw.put(key(kind)).value(value).exec();
const FORMS: [string, Spoil, string][] = [
  ['a token key value too short', put('t', 'garbage'), 'too short'],
  ['a token key value that is not JSON', put('t', `${NONCE}not json`), 'not JSON'],
  ['a token key value that is a JSON array', put('t', `${NONCE}[1]`), 'not a JSON object'],
  ['an owner that is a number', put('t', json({ owner: 7, expiresAt: 1 })), 'owner is 7'],
  ['a missing owner', put('t', json({ expiresAt: 1 })), 'owner is missing'],
  [
    'a huge owner',
    put('t', json({ owner: 'o'.repeat(100_000), expiresAt: 1 })),
    'owner is 100000 bytes',
  ],
  [
    'an expiresAt that is a string',
    put('t', json({ owner: 'x', expiresAt: 'soon' })),
    'expiresAt is a string',
  ],
  ['a negative expiresAt', put('t', json({ owner: 'x', expiresAt: -5 })), 'expiresAt is -5'],
  ['a fractional expiresAt', put('t', json({ owner: 'x', expiresAt: 1.5 })), 'expiresAt is 1.5'],
  ['a missing expiresAt', put('t', json({ owner: 'x' })), 'expiresAt is missing'],
  ['a record key value that is not JSON', put('r', 'garbage'), "record key's value is not JSON"],
  ['a deleted token key', (raw, key) => raw.delete().key(key('t')).exec(), 'token key is missing'],
];

describeServer('etcd corrupt records', etcdUnavailable(), () => {
  let etcd: EtcdCluster;
  let raw: Etcd3;
  let n = 0;
  const opened: LeaseStore[] = [];
  const open = async (prefix: string): Promise<LeaseStore> => {
    const store = await openStore(`${etcd.url}?prefix=${prefix}&timeoutMs=3000`);
    opened.push(store);
    return store;
  };
  const fresh = (): string => `/c${++n}/`;
  /** Every key of `resource`: kind, value, version, lease, to compare before and after. */
  const keysOf = async (prefix: string, resource: string): Promise<unknown> => {
    const { kvs } = await raw.kv.range({
      key: Buffer.from(`${prefix}${resource}\0`),
      range_end: Buffer.from(`${prefix}${resource}\x01`),
    });
    return kvs.map((kv) => [kv.key.toString(), kv.value.toString('hex'), kv.version, kv.lease]);
  };
  const invalid = async (call: Promise<unknown>, resource: string, word: string): Promise<void> => {
    const error = await rejection(call);
    expect(error.code, error.message).toBe('RECORD_INVALID');
    expect(error.resource).toBe(resource);
    expect(error.retryable).toBe(false);
    expect(error.message).toContain(word);
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

  it.each(FORMS)(
    'a held record with %s: get, list and the acquires it refuses answer RECORD_INVALID, keys unchanged',
    async (_title, spoil, word) => {
      const prefix = fresh();
      const store = await open(prefix);
      const released = (await store.tryAcquire('ok', 'w', 60_000))!;
      await store.release(released);
      const held = (await store.tryAcquire('bad', 'w', 60_000))!;
      if (word.startsWith('record key')) await store.renew(held); // the record key is written by renewals
      await spoil(raw, (kind) => `${prefix}bad\0${kind}`);
      const before = await keysOf(prefix, 'bad');

      await invalid(store.get('bad'), 'bad', word);
      await invalid(store.list(), 'bad', word);
      await invalid(store.tryAcquire('bad', 'b', 5000), 'bad', word);
      // Two at once: the second goes coalesced with the first in one Txn, and only it is refused.
      const [fresh1, bad] = await Promise.allSettled([
        store.tryAcquire('fresh', 'b', 5000),
        store.tryAcquire('bad', 'b', 5000),
      ]);
      expect(fresh1).toMatchObject({ status: 'fulfilled', value: { owner: 'b', token: 1 } });
      expect(bad.status).toBe('rejected');
      await invalid(Promise.reject((bad as PromiseRejectedResult).reason), 'bad', word);
      await invalid(store.acquireAll(['ok', 'bad'], 'b', 5000), 'bad', word);
      expect(await store.get('ok')).toMatchObject({ owner: '', token: released.token });
      // acquireFirst reads nothing of a held candidate: it goes on to the next, or refuses.
      expect(await store.acquireFirst(['bad'], 'b', 5000)).toBeNull();

      // acquireMany fails as a whole, after giving back what it granted meanwhile.
      await invalid(store.acquireMany(['ok', 'bad'], 'b', 5000), 'bad', word);
      expect(await store.get('ok')).toMatchObject({ owner: '', token: released.token + 1 });
      expect(await keysOf(prefix, 'bad')).toEqual(before);
    },
  );

  it.each([
    ['a hold key naming an owner on no etcd lease', 'mallory', 'on no etcd lease'],
    ['a hold key with a huge owner', 'o'.repeat(100_000), 'owner is 100000 bytes'],
  ])('%s: get and list answer RECORD_INVALID', async (_title, owner, word) => {
    const prefix = fresh();
    const store = await open(prefix);
    await store.tryAcquire('bad', 'w', 60_000);
    await raw.put(`${prefix}bad\0h`).value(owner); // on no etcd lease
    await invalid(store.get('bad'), 'bad', word);
    await invalid(store.list(), 'bad', word);
  });

  /** The keys' values and etcd leases (an undone grant moves versions on, never values). */
  const valuesOf = async (prefix: string, resource: string): Promise<unknown> =>
    ((await keysOf(prefix, resource)) as string[][]).map(([key, value, , lease]) => [
      key,
      value,
      lease,
    ]);

  const FREE: [string, Spoil, string][] = [
    ['a token key value that is not JSON', put('t', `${NONCE}not json`), 'not JSON'],
    [
      'a huge owner in the token key',
      put('t', json({ owner: 'o'.repeat(100_000), expiresAt: 1 })),
      'owner is 100000 bytes',
    ],
    [
      'a deleted token key',
      (raw, key) => raw.delete().key(key('t')).exec(),
      'token key is missing',
    ],
    ['a hold key naming an owner on no etcd lease', put('h', 'mallory'), 'on no etcd lease'],
  ];

  it.each(FREE)(
    'a released record with %s: every acquire path answers RECORD_INVALID, its grant undone, no token handed out',
    async (_title, spoil, word) => {
      const prefix = fresh();
      const store = await open(prefix);
      const released = (await store.tryAcquire('ok', 'w', 60_000))!;
      await store.release(released);
      const lease = (await store.tryAcquire('bad', 'w', 60_000))!;
      await store.release(lease);
      await spoil(raw, (kind) => `${prefix}bad\0${kind}`);
      const before = await valuesOf(prefix, 'bad');
      const okBefore = await valuesOf(prefix, 'ok');

      await invalid(store.get('bad'), 'bad', word);
      await invalid(store.tryAcquire('bad', 'b', 5000), 'bad', word);
      expect(await valuesOf(prefix, 'bad')).toEqual(before);
      const [fresh1, bad] = await Promise.allSettled([
        store.tryAcquire('fresh', 'b', 5000),
        store.tryAcquire('bad', 'b', 5000),
      ]);
      expect(fresh1).toMatchObject({ status: 'fulfilled', value: { owner: 'b', token: 1 } });
      await invalid(Promise.reject((bad as PromiseRejectedResult).reason), 'bad', word);
      await invalid(store.acquireAll(['ok', 'bad'], 'b', 5000), 'bad', word);
      expect(await valuesOf(prefix, 'ok')).toEqual(okBefore); // the whole group put back
      await invalid(store.acquireFirst(['bad', 'ok'], 'b', 5000), 'bad', word);
      await invalid(store.acquireMany(['ok', 'bad'], 'b', 5000), 'bad', word);
      expect(await store.get('ok')).toMatchObject({ owner: '' }); // given back
      expect(await valuesOf(prefix, 'bad')).toEqual(before);
      await invalid(store.list(), 'bad', word);
    },
  );

  const BECOMES: [string, Spoil][] = [
    ['its token key was written by hand', put('t', 'garbage')],
    ['its token key was deleted', (r, key) => r.delete().key(key('t')).exec()],
    ['its hold key names another owner', put('h', 'mallory')],
  ];

  it.each(BECOMES)(
    'renew and release of a lease whose keys became corrupt (%s): not ours, keys unchanged',
    async (_title, spoil) => {
      const prefix = fresh();
      const store = await open(prefix);
      const lease: Lease = (await store.tryAcquire('job', 'a', 60_000))!;
      const other = (await store.tryAcquire('other', 'a', 60_000))!;
      await spoil(raw, (kind) => `${prefix}job\0${kind}`);
      const before = await keysOf(prefix, 'job');

      expect(await store.renew(lease)).toBeNull();
      expect(await store.renew(lease, undefined, 'data')).toBeNull();
      expect(await store.writeData(lease, 'data')).toBe(false);
      expect(await store.release(lease)).toBe(false);
      expect(await store.release(lease, 'data')).toBe(false);
      const renewed = await store.renewMany([lease, other]);
      expect(renewed[0]).toBeNull();
      expect(renewed[1]).toMatchObject({ resource: 'other', token: other.token });
      expect(await store.releaseMany([lease, other])).toEqual([false, true]);
      expect(await keysOf(prefix, 'job')).toEqual(before);
    },
  );
});
