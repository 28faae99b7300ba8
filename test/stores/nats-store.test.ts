import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient, type LeaseStore, type WatchEvent } from '../../src/index.js';
import { parseStoreUrl } from '../../src/core/store-url.js';
import { NatsStore } from '../../src/stores/nats/index.js';
import { filterOf, keyOf, resourceOf } from '../../src/stores/nats/nats-keys.js';
import { parseNatsUrl } from '../../src/stores/nats/nats-url.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';
import { NatsServer, natsUnavailable } from '../harness/nats-server.js';
import { waitFor } from '../harness/processes.js';

describe('nats:// URLs', () => {
  it('reads servers, credentials and parameters', () => {
    const target = parseNatsUrl(
      parseStoreUrl(
        'nats://lh:p%40ss@10.0.0.1,10.0.0.2:4333?bucket=jobs&maxClockSkewMs=250&timeoutMs=800&createBucket=false&replicas=3&concurrency=4',
      ),
    );
    expect(target.servers).toEqual(['10.0.0.1:4222', '10.0.0.2:4333']);
    expect(target.auth).toEqual({ user: 'lh', pass: 'p@ss' });
    expect(target.store).toEqual({
      bucket: 'jobs',
      maxClockSkewMs: 250,
      timeoutMs: 800,
      createBucket: false,
      replicas: 3,
      concurrency: 4,
    });
    expect(target.redacted).not.toContain('p%40ss');
    expect(parseNatsUrl(parseStoreUrl('nats://s3cr3t@host')).auth).toEqual({ token: 's3cr3t' });
    expect(parseNatsUrl(parseStoreUrl('nats://s3cr3t@host')).redacted).toBe('nats://***@host');
  });

  it('refuses bad URLs with STORE_URL_INVALID naming the problem, never the secret', async () => {
    const cases: [string, RegExp][] = [
      ['nats://host/leases', /a path/],
      ['nats://host?bucket=a.b', /bucket must be/],
      ['nats://host?bucket=x&bucket=y', /given 2 times/],
      ['nats://host?buckt=x', /unknown parameter "buckt"/],
      ['nats://host?timeoutMs=soon', /whole number/],
      ['nats://host?createBucket=yes', /true or false/],
      ['nats://host?replicas=0', /replicas must be/],
      ['nats://host?replicas=6', /replicas must be/],
      ['nats://host?replicas=three', /whole number/],
      ['nats://host,', /empty server/],
      ['nats://t0ken@host?bucket=no/slash', /bucket must be/],
    ];
    for (const [url, message] of cases) {
      const error = await rejection(NatsStore.open(url));
      expect(error.code, url).toBe('STORE_URL_INVALID');
      expect(error.message, url).toMatch(message);
      expect(error.message).not.toContain('t0ken');
    }
  });

  it('keys: one hex token per UTF-8 byte and an end token, so a name prefix is a subject filter', () => {
    expect(keyOf('ab')).toBe('61.62._');
    expect(keyOf('é')).toBe('c3.a9._');
    expect(filterOf('a')).toBe('61.>');
    expect(filterOf('')).toBe('>');
    for (const name of ['a', 'x'.repeat(512), '🚀/名前', 'line\nbreak', '\u{10FFFF}'])
      expect(resourceOf(keyOf(name))).toBe(name);
    expect(resourceOf('61.62')).toBeUndefined();
    expect(resourceOf('ff._')).toBeUndefined(); // not UTF-8
  });
});

describeServer('NatsStore on a private nats-server', natsUnavailable(), () => {
  let server: NatsServer;
  const stores: LeaseStore[] = [];
  let buckets = 0;

  beforeAll(async () => {
    server = await NatsServer.start();
  });
  afterAll(async () => {
    await Promise.allSettled(stores.map((s) => s.close()));
    await server?.stop();
  });

  async function open(bucket = `store_${++buckets}`, params = ''): Promise<NatsStore> {
    const store = await NatsStore.open(
      `${server.url}?bucket=${bucket}&maxClockSkewMs=50&timeoutMs=2000${params}`,
    );
    stores.push(store);
    return store;
  }

  /** A raw KV handle on `bucket`, as another program on the same server would have. */
  async function raw(bucket: string, options: object = {}) {
    const nc = await connect({ servers: `127.0.0.1:${server.port}` });
    const kv = await new Kvm(jetstream(nc)).create(bucket, options);
    return { kv, close: () => nc.close() };
  }

  it('a renewal that lands after a newer one never moves expiresAt backwards, and still succeeds', async () => {
    const bucket = `store_${++buckets}`;
    const t0 = 1_800_000_000_000;
    const older = { now: () => t0 };
    const newer = { now: () => t0 };
    const url = `${server.url}?bucket=${bucket}&maxClockSkewMs=50&timeoutMs=2000`;
    const a = await NatsStore.open(url, { clock: older });
    const b = await NatsStore.open(url, { clock: newer });
    stores.push(a, b);
    const lease = (await a.tryAcquire('job', 'holder', 2000))!;
    newer.now = () => t0 + 1500; // the newer renewal (another handle of the holder) lands first
    expect(await b.renew(lease)).toMatchObject({ expiresAt: t0 + 3500 });
    older.now = () => t0 + 500; // the older one, computed earlier, lands after it
    expect(await a.renew(lease)).toMatchObject({ owner: 'holder', token: 1, expiresAt: t0 + 3500 });
    expect((await b.get('job'))!.expiresAt).toBe(t0 + 3500);
    expect(await a.renew({ ...lease, token: 2 })).toBeNull();
  });

  it('declares a local clock, no batch call, a watch and lease data', async () => {
    const store = await open();
    expect(store.capabilities).toEqual({
      clock: 'local',
      batch: false,
      watch: true,
      atomicGroupMax: 0,
      data: true,
    });
    expect(store.maxClockSkewMs).toBe(50);
  });

  it('refuses a bucket that loses records (max age, memory storage) with STORE_UNSAFE, and a missing one when told not to create it', async () => {
    const aged = await raw('aged', { ttl: 60_000 });
    const memory = await raw('inmemory', { storage: 'memory' });
    try {
      const expiring = await rejection(NatsStore.open(`${server.url}?bucket=aged`));
      expect([expiring.code, expiring.retryable]).toEqual(['STORE_UNSAFE', false]);
      expect(expiring.message).toMatch(/expire after 60000 ms/);
      const volatile = await rejection(NatsStore.open(`${server.url}?bucket=inmemory`));
      expect(volatile.code).toBe('STORE_UNSAFE');
      expect(volatile.message).toMatch(/memory storage/);
    } finally {
      await aged.close();
      await memory.close();
    }
    const missing = await rejection(
      NatsStore.open(`${server.url}?bucket=never_made&createBucket=false`),
    );
    expect([missing.code, missing.retryable]).toEqual(['STORE_UNAVAILABLE', false]);
    expect(missing.message).toMatch(/does not exist/);
  });

  it('uses a NatsConnection it is given and leaves it open on close', async () => {
    const nc = await connect({ servers: `127.0.0.1:${server.port}` });
    try {
      const store = await NatsStore.open(nc, { bucket: 'given', maxClockSkewMs: 0 });
      expect(await store.tryAcquire('job', 'a', 5000)).toMatchObject({ token: 1 });
      await store.close();
      expect(nc.isClosed()).toBe(false);
      const again = await NatsStore.open(nc, { bucket: 'given' });
      expect(await again.get('job')).toMatchObject({ owner: 'a', token: 1 });
      await again.close();
      const bad = await rejection(NatsStore.open(nc, { bucket: 'given', timeoutMS: 5 } as object));
      expect(bad.message).toMatch(/did you mean "timeoutMs"/);
    } finally {
      await nc.close();
    }
  });

  it('connects through the driver modules it is given (for bundles), and refuses anything else', async () => {
    const transport = await import('@nats-io/transport-node');
    let connects = 0;
    const modules = {
      transport: {
        ...transport,
        connect: (options: object) => {
          connects++;
          return transport.connect(options);
        },
      },
      jetstream: await import('@nats-io/jetstream'),
      kv: await import('@nats-io/kv'),
    };
    const store = await NatsStore.open(`${server.url}?bucket=bundled`, { modules });
    try {
      expect(await store.tryAcquire('job', 'a', 5000)).toMatchObject({ token: 1 });
      expect(connects).toBe(1);
    } finally {
      await store.close();
    }
    const bad = await rejection(
      NatsStore.open(`${server.url}?bucket=bundled`, { modules: { transport } as never }),
    );
    expect(bad.code).toBe('INVALID_ARGUMENT');
    expect(bad.message).toMatch(/modules/);
  });

  it('a key deleted behind its back does not restart the token: the next one is above every revision the key had', async () => {
    const store = await open('deleted');
    for (let i = 0; i < 3; i++) await store.release((await store.tryAcquire('job', 'a', 5000))!);
    const other = await raw('deleted');
    try {
      await other.kv.delete(keyOf('job'));
    } finally {
      await other.close();
    }
    expect(await store.get('job')).toBeNull();
    const lease = (await store.tryAcquire('job', 'b', 5000))!;
    expect(lease.token).toBeGreaterThan(3);
    expect(await store.get('job')).toMatchObject({ owner: 'b', token: lease.token });
  });

  it('a value leasehold did not write is an error naming the resource, not a free record', async () => {
    const store = await open('foreign');
    const other = await raw('foreign');
    try {
      await other.kv.put(keyOf('job'), 'hello');
    } finally {
      await other.close();
    }
    for (const call of [() => store.get('job'), () => store.tryAcquire('job', 'a', 5000)]) {
      const error = await rejection(call());
      expect([error.code, error.retryable]).toEqual(['RECORD_INVALID', false]);
      expect(error.message).toMatch(/record of "job" is not one leasehold writes/);
    }
  });

  it('racing acquirers on separate connections: exactly one wins each round, tokens rise by one', async () => {
    const handles = await Promise.all([1, 2, 3, 4, 5].map(() => open('racing')));
    for (let round = 1; round <= 5; round++) {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => handles[i % 5]!.tryAcquire('race', `w${i}`, 5000)),
      );
      const winners = results.filter((r) => r !== null);
      expect(winners).toHaveLength(1);
      expect(winners[0]!.token).toBe(round);
      expect(await handles[0]!.release(winners[0]!)).toBe(true);
    }
  });

  describe('watch', () => {
    it('wakes a waiting acquirer: on a release, and once a lapsed lease may be taken (not before)', async () => {
      const waiter = await open('waking');
      const holder = await open('waking');
      const taken: { resource: string; token: number | null; type: string }[] = [];
      const unwatch = waiter.watch('', (event) => {
        if (event.type === 'acquired') return;
        void waiter.tryAcquire(event.resource, 'waiter', 5000).then((lease) => {
          taken.push({ resource: event.resource, token: lease?.token ?? null, type: event.type });
        });
      });
      await unwatch.ready;
      await holder.release((await holder.tryAcquire('released', 'h', 60_000))!);
      await holder.tryAcquire('lapsed', 'h', 300); // never renewed: the holder died, say
      await waitFor('both taken', () => taken.length === 2, 5000);
      expect(taken.sort((a, b) => a.resource.localeCompare(b.resource))).toEqual([
        { resource: 'lapsed', token: 2, type: 'expired' },
        { resource: 'released', token: 2, type: 'released' },
      ]);
      unwatch();
    });

    it('a lease its holder keeps renewing never reports expired', async () => {
      const watcher = await open('renewed');
      const events: WatchEvent[] = [];
      const unwatch = watcher.watch('', (event) => events.push(event));
      await unwatch.ready;
      const client = new LeaseClient({ store: await open('renewed'), owner: 'a', ttlMs: 300 });
      const held = await client.acquire('job');
      let renewals = 0;
      held.on('renewed', () => renewals++);
      // Past three TTLs, renewed all along; the watch has heard each renewal's write by then.
      await waitFor('nine renewals', () => renewals >= 9, 10_000);
      const marker = (await client.tryAcquire('marker'))!;
      await waitFor('the marker', () => events.length >= 2, 5000);
      expect(held.state).not.toBe('lost');
      expect(events).toEqual([
        { type: 'acquired', resource: 'job' },
        { type: 'acquired', resource: 'marker' },
      ]);
      await marker.release();
      await waitFor('the marker released', () => events.length === 3);
      await client.close();
      await waitFor('the release', () => events.length === 4);
      expect(events[3]).toEqual({ type: 'released', resource: 'job' });
      unwatch();
    });
  });
});
