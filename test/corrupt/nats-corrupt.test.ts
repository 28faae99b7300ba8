import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Lease } from '../../src/index.js';
import { NatsStore } from '../../src/stores/nats/index.js';
import { keyOf } from '../../src/stores/nats/nats-keys.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';
import { NatsServer, natsUnavailable } from '../harness/nats-server.js';
import { waitFor } from '../harness/processes.js';

/**
 * Values written by hand (or by another program) into the bucket's keys: every store call that
 * meets one answers RECORD_INVALID (renew / release: "not ours"), nothing is ever granted over it,
 * and the key keeps its value and revision. acquireMany fails as a whole, giving back what it took
 * meanwhile; acquireAll takes nothing; renewMany / releaseMany answer per lease.
 */

const json = (value: unknown): string => JSON.stringify(value);
const record = (fields: Record<string, unknown>): string =>
  json({ owner: 'x', token: 7, expiresAt: 1000, nonce: 'n', ...fields });
const without = (field: string): string => {
  const value: Record<string, unknown> = { owner: 'x', token: 7, expiresAt: 1000, nonce: 'n' };
  delete value[field];
  return json(value);
};

/** Each form: the value written, and a word its RECORD_INVALID message contains. */
const FORMS: [string, string | Uint8Array, string][] = [
  ['a value that is not JSON', 'garbage', 'not JSON'],
  ['a value that is not UTF-8', new Uint8Array([0xff, 0xfe, 0x7b]), 'not JSON'],
  ['a JSON array', '[1,2]', 'not a JSON object'],
  ['a JSON null', 'null', 'not a JSON object'],
  ['a token as a string', record({ token: '12' }), 'token is a string'],
  ['a negative token', record({ token: -3 }), 'token is -3'],
  ['a zero token', record({ token: 0 }), 'token is 0'],
  ['a fractional token', record({ token: 1.5 }), 'token is 1.5'],
  [
    'a token above 2^53 − 1',
    '{"owner":"x","token":9007199254740993,"expiresAt":1000,"nonce":"n"}',
    'not a positive safe integer',
  ],
  ['a missing token', without('token'), 'token is missing'],
  ['an expiresAt that is not a number', record({ expiresAt: 'soon' }), 'expiresAt is a string'],
  ['a negative expiresAt', record({ expiresAt: -5 }), 'expiresAt is -5'],
  ['a missing expiresAt', without('expiresAt'), 'expiresAt is missing'],
  ['a missing owner', without('owner'), 'owner is missing'],
  ['an owner that is a number', record({ owner: 7 }), 'owner is 7'],
  ['a huge owner', record({ owner: 'o'.repeat(100_000) }), 'owner is 100000 bytes'],
  ['a missing nonce', without('nonce'), 'nonce is undefined'],
  ['data that is a number', record({ data: 5 }), 'data is number'],
];

describeServer('NATS corrupt records', natsUnavailable(), () => {
  let server: NatsServer;
  let store: NatsStore;
  let nc: NatsConnection;
  let kv: KV;
  const bucket = 'corrupt';

  beforeAll(async () => {
    server = await NatsServer.start();
    store = await NatsStore.open(`${server.url}?bucket=${bucket}&maxClockSkewMs=0`);
    nc = await connect({ servers: `127.0.0.1:${server.port}` });
    kv = await new Kvm(jetstream(nc)).open(bucket);
  });
  afterAll(async () => {
    await store?.close();
    await nc?.close();
    await server?.stop();
  });

  /** The key's last entry: its revision and value, to compare before and after. */
  const entryOf = async (resource: string): Promise<unknown> => {
    const entry = await kv.get(keyOf(resource));
    return entry && [entry.revision, entry.operation, Buffer.from(entry.value).toString('hex')];
  };
  const invalid = async (call: Promise<unknown>, resource: string, word: string): Promise<void> => {
    const error = await rejection(call);
    expect(error.code, error.message).toBe('RECORD_INVALID');
    expect(error.resource).toBe(resource);
    expect(error.retryable).toBe(false);
    expect(error.message).toContain(word);
  };

  it.each(FORMS.map((form, i) => [...form, i] as const))(
    '%s: get, list and every acquire path answer RECORD_INVALID and leave it as it was',
    async (_title, value, word, i) => {
      const [bad, ok, held] = [`f${i}/bad`, `f${i}/ok`, `f${i}/held`];
      const released = (await store.tryAcquire(ok, 'w', 60_000))!;
      await store.release(released);
      await store.tryAcquire(held, 'w', 60_000);
      await kv.put(keyOf(bad), value);
      const before = await entryOf(bad);

      await invalid(store.get(bad), bad, word);
      await invalid(store.list({ prefix: `f${i}/` }), bad, word);
      await invalid(store.tryAcquire(bad, 'b', 5000), bad, word);
      await invalid(store.acquireAll([ok, bad], 'b', 5000), bad, word);
      await invalid(store.acquireFirst([held, bad, ok], 'b', 5000), bad, word);
      await invalid(store.acquireFirst([bad, ok], 'b', 5000), bad, word);
      expect(await entryOf(bad)).toEqual(before);
      // acquireAll took nothing (its members go in name order: the corrupt one first).
      expect(await store.get(ok)).toMatchObject({ owner: '', token: released.token });

      // acquireMany fails as a whole, after giving back what it took: the healthy record beside
      // the corrupt one is released again (its token moved on by the grant given back).
      await invalid(store.acquireMany([ok, bad], 'b', 5000), bad, word);
      expect(await entryOf(bad)).toEqual(before);
      expect(await store.get(ok)).toMatchObject({ owner: '', token: released.token + 1 });
      expect(await store.tryAcquire(ok, 'b', 5000)).toMatchObject({ token: released.token + 2 });
    },
  );

  it('a token of 2^53 − 1 is read, but no acquire takes it once free (no safe token can follow)', async () => {
    const top = 'top';
    await kv.put(keyOf(top), record({ owner: '', token: Number.MAX_SAFE_INTEGER, expiresAt: 0 }));
    const before = await entryOf(top);
    expect(await store.get(top)).toMatchObject({ owner: '', token: Number.MAX_SAFE_INTEGER });
    await invalid(store.tryAcquire(top, 'b', 5000), top, 'none can follow');
    await invalid(store.acquireMany([top], 'b', 5000), top, 'none can follow');
    expect(await entryOf(top)).toEqual(before);
  });

  it('a release at 2^53 − 1 its watch saw is not taken either (the grant without a read needs a safe next token)', async () => {
    const top = 'top-seen';
    const seen: string[] = [];
    const unwatch = store.watch(top, (event) => seen.push(event.type));
    await unwatch.ready;
    try {
      await kv.put(keyOf(top), record({ owner: '', token: Number.MAX_SAFE_INTEGER, expiresAt: 0 }));
      await waitFor('the release seen', () => seen.includes('released'));
      const before = await entryOf(top);
      await invalid(store.tryAcquire(top, 'b', 5000), top, 'none can follow');
      expect(await entryOf(top)).toEqual(before);
    } finally {
      unwatch();
    }
  });

  it('a record this store released, then written by hand: the grant on its known revision fails, and the read refuses it', async () => {
    const lease = (await store.tryAcquire('rel', 'a', 60_000))!;
    await store.release(lease); // the next grant here goes without a read, on this revision
    await kv.put(keyOf('rel'), record({ owner: '', token: -1, expiresAt: 0 }));
    const before = await entryOf('rel');
    await invalid(store.tryAcquire('rel', 'a', 5000), 'rel', 'token is -1');
    expect(await entryOf('rel')).toEqual(before);
  });

  const BECOMES: [string, (lease: Lease) => string][] = [
    ['its value is not JSON', () => 'garbage'],
    ['its token is a string', (l) => record({ owner: l.owner, token: String(l.token) })],
    ['its token is negative', (l) => record({ owner: l.owner, token: -l.token })],
    ['its owner is missing', (l) => without('owner').replace('"token":7', `"token":${l.token}`)],
    [
      'its expiresAt is not a number',
      (l) => record({ owner: l.owner, token: l.token, expiresAt: 'x' }),
    ],
  ];

  it.each(BECOMES.map((form, i) => [...form, i] as const))(
    'renew, release and writeData of a lease whose record became corrupt (%s): not ours, record unchanged',
    async (_title, spoil, i) => {
      const [job, other] = [`r${i}/job`, `r${i}/other`];
      const lease = (await store.tryAcquire(job, 'a', 60_000))!;
      const otherLease = (await store.tryAcquire(other, 'a', 60_000))!;
      await kv.put(keyOf(job), spoil(lease));
      const before = await entryOf(job);

      expect(await store.renew(lease)).toBeNull();
      expect(await store.renew(lease, undefined, 'data')).toBeNull();
      expect(await store.writeData(lease, 'data')).toBe(false);
      expect(await store.release(lease)).toBe(false);
      expect(await store.release(lease, 'data')).toBe(false);
      const renewed = await store.renewMany([lease, otherLease]);
      expect(renewed[0]).toBeNull();
      expect(renewed[1]).toMatchObject({ resource: other, token: otherLease.token });
      expect(await store.releaseMany([lease, otherLease])).toEqual([false, true]);
      expect(await entryOf(job)).toEqual(before);
    },
  );
});
