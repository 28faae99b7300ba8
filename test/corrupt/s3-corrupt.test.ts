import {
  DeleteObjectCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ErrorCode, type Lease } from '../../src/index.js';
import { S3Store } from '../../src/stores/s3/index.js';
import { KeySpace } from '../../src/stores/s3/s3-keys.js';
import { CEPH_S3_USER, CephServer, cephUnavailable } from '../harness/ceph-server.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';

const BUCKET = 'leasehold-corrupt';

/** A released record of `resource` (free if valid), with `changes` made to it. */
const body = (resource: string, changes: Record<string, unknown> = {}, drop?: string): string => {
  const record: Record<string, unknown> = {
    resource,
    owner: '',
    token: 5,
    expiresAt: 0,
    write: 'by-hand',
    ...changes,
  };
  if (drop) delete record[drop];
  return JSON.stringify(record);
};

/** Objects written by hand at records' keys: not a record at all, or a record with a bad field. */
const CORRUPT: Readonly<Record<string, string>> = {
  'not-json': 'hello, world',
  'json-array': '[1,2,3]',
  'json-null': 'null',
  empty: '',
  'other-resource': body('elsewhere'),
  'no-token': body('no-token', {}, 'token'),
  'no-owner': body('no-owner', {}, 'owner'),
  'no-expires': body('no-expires', {}, 'expiresAt'),
  'no-write': body('no-write', {}, 'write'),
  'token-string': body('token-string', { token: '5' }),
  'token-huge': body('token-huge').replace('"token":5', '"token":9007199254740993'),
  'token-negative': body('token-negative', { token: -3 }),
  'token-zero': body('token-zero', { token: 0 }),
  'token-fraction': body('token-fraction', { token: 2.5 }),
  'owner-number': body('owner-number', { owner: 7 }),
  'owner-huge': body('owner-huge', { owner: 'o'.repeat(1000), expiresAt: 1 }),
  'expires-string': body('expires-string', { expiresAt: 'soon' }),
  'expires-negative': body('expires-negative', { owner: 'x', expiresAt: -1 }),
};
const NAMES = Object.keys(CORRUPT);

describeServer('S3 store: corrupt records', cephUnavailable(), () => {
  let ceph: CephServer;
  let client: S3Client;
  let store: S3Store;
  const prefix = `c${process.pid}`;
  let keys: KeySpace;

  const put = (resource: string, text: string) =>
    client.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: keys.keyOf(resource), Body: Buffer.from(text) }),
    );
  const read = async (resource: string): Promise<string> => {
    const got = await client.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: keys.keyOf(resource) }),
    );
    return got.Body!.transformToString();
  };
  const unchanged = async (names: readonly string[]) => {
    for (const name of names) expect(await read(name)).toBe(CORRUPT[name]);
  };
  const invalid = async (call: Promise<unknown>) =>
    expect((await rejection(call)).code).toBe(ErrorCode.RECORD_INVALID);

  beforeAll(async () => {
    ceph = await CephServer.start();
    client = new S3Client({
      region: 'us-east-1',
      endpoint: ceph.endpoint,
      forcePathStyle: true,
      credentials: { ...CEPH_S3_USER },
    });
    store = await S3Store.open(client, {
      bucket: BUCKET,
      prefix,
      maxClockSkewMs: 0,
      createBucket: true,
    });
    keys = new KeySpace(BUCKET, store.prefix);
    await Promise.all(NAMES.map((name) => put(name, CORRUPT[name]!)));
  }, 60_000);
  afterAll(async () => {
    await store?.close();
    client?.destroy();
    await ceph?.stop();
  });

  it('get and tryAcquire answer RECORD_INVALID for each corrupt form, nothing overwritten', async () => {
    for (const name of NAMES) {
      await invalid(store.get(name));
      await invalid(store.tryAcquire(name, 'thief', 5000));
    }
    await unchanged(NAMES);
  });

  it('lease data in no known form stays a lasting STORE_UNAVAILABLE (core/lease-data.ts), nothing overwritten', async () => {
    const text = body('data-number', { data: 42 });
    await put('data-number', text);
    const calls = [
      () => store.get('data-number'),
      () => store.tryAcquire('data-number', 'x', 5000),
    ];
    for (const call of calls) {
      const error = await rejection(call());
      expect([error.code, error.retryable]).toEqual([ErrorCode.STORE_UNAVAILABLE, false]);
    }
    expect(await read('data-number')).toBe(text);
    await client.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: keys.keyOf('data-number') }));
  });

  it('list fails as a whole when its page meets a corrupt record', async () => {
    await invalid(store.list());
    await invalid(store.list({ prefix: 'token-' }));
  });

  it('batch acquires fail as a whole with RECORD_INVALID, granting no corrupt record', async () => {
    // acquireMany stops at the first error and throws it: the batch fails as a whole (a healthy
    // member granted before it is unknown to the caller and lapses at its TTL).
    await invalid(store.acquireMany(['healthy', ...NAMES], 'b', 5000));
    // acquireAll takes members in order and gives back what it took when one fails.
    await invalid(store.acquireAll(['healthy-2', 'token-zero'], 'c', 5000));
    expect(await store.get('healthy-2')).toMatchObject({ owner: '', token: 1 });
    await invalid(store.acquireFirst(['token-negative', 'healthy-3'], 'd', 5000));
    expect(await store.get('healthy-3')).toBeNull();
    await unchanged(NAMES);
  });

  it('a lease whose record became corrupt is neither renewed nor released', async () => {
    const leases: Lease[] = [];
    for (const resource of ['gone-1', 'gone-2', 'kept'])
      leases.push((await store.tryAcquire(resource, 'h', 60_000))!);
    const [one, two, kept] = leases as [Lease, Lease, Lease];
    // Owner and token as the holder knows them, one other field broken.
    const broken1 = JSON.stringify({ ...JSON.parse(await read('gone-1')), expiresAt: 'later' });
    const broken2 = JSON.stringify({ ...JSON.parse(await read('gone-2')), token: -two.token });
    await put('gone-1', broken1);
    await put('gone-2', broken2);
    for (const lease of [one, two]) {
      expect(notOurs(await store.renew(lease).catch(codeOf))).toBe(true);
      expect(notOurs(await store.release(lease).catch(codeOf))).toBe(true);
    }
    const renewed = await store.renewMany([one, kept, two]).catch(codeOf);
    if (Array.isArray(renewed)) {
      expect(renewed[0]).toBeNull();
      expect(renewed[1]).toMatchObject({ resource: 'kept', token: kept.token });
      expect(renewed[2]).toBeNull();
    } else expect(renewed).toBe(ErrorCode.RECORD_INVALID);
    const released = await store.releaseMany([one, kept, two]).catch(codeOf);
    if (Array.isArray(released)) expect(released).toEqual([false, true, false]);
    else expect(released).toBe(ErrorCode.RECORD_INVALID);
    expect([await read('gone-1'), await read('gone-2')]).toEqual([broken1, broken2]);
  });
});

function codeOf(error: unknown): string {
  return (error as { code?: string }).code ?? String(error);
}

function notOurs(answer: unknown): boolean {
  return answer === null || answer === false || answer === ErrorCode.RECORD_INVALID;
}
