import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import * as transport from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NatsStore } from '../../src/stores/nats/index.js';
import { mapNatsError } from '../../src/stores/nats/nats-errors.js';
import { NatsPublisher } from '../../src/stores/nats/nats-publish.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection, settled, sleep } from '../harness/expect-error.js';
import { NatsServer, natsUnavailable } from '../harness/nats-server.js';
import { freePort } from '../harness/ports.js';
import { startProcess, stopProcess, tempDir, waitFor } from '../harness/processes.js';

const data = (text: string): Uint8Array => Buffer.from(text);

describeServer('NATS conditional writes (NatsPublisher)', natsUnavailable(), () => {
  let server: NatsServer;
  let nc: transport.NatsConnection;

  beforeAll(async () => {
    server = await NatsServer.start();
    nc = await transport.connect({ servers: `127.0.0.1:${server.port}` });
  });
  afterEach(() => server.resume());
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  it('writes on the revision it names and answers the new one; a stale revision is refused with null', async () => {
    const kv = await new Kvm(jetstream(nc)).create('publish', { history: 1 });
    const publisher = new NatsPublisher(nc, transport, '$KV.publish.', 2000);
    try {
      expect(await publisher.put('k', data('zero'), 1)).toBeNull(); // the key has no revision yet
      const first = (await publisher.put('k', data('one'), 0))!;
      expect(first).toBeGreaterThan(0);
      const second = (await publisher.put('k', data('two'), first))!;
      expect(second).toBeGreaterThan(first);
      expect(await publisher.put('k', data('late'), first)).toBeNull();
      const entry = (await kv.get('k'))!;
      expect([entry.revision, entry.string()]).toEqual([second, 'two']);
      // Many at once, through the one subscription: each answer reaches its own write.
      const keys = Array.from({ length: 200 }, (_, i) => `many.${i}`);
      const revisions = await Promise.all(keys.map((key) => publisher.put(key, data(key), 0)));
      expect(new Set(revisions).size).toBe(keys.length);
      for (const i of [0, 77, 199]) expect((await kv.get(keys[i]!))!.revision).toBe(revisions[i]);
    } finally {
      publisher.close();
    }
  });

  it('no answer in time: the write fails by its deadline with a retryable timeout, even if it lands later', async () => {
    await new Kvm(jetstream(nc)).create('paused', { history: 1 });
    const publisher = new NatsPublisher(nc, transport, '$KV.paused.', 300);
    try {
      server.pause();
      const started = performance.now();
      const writes = Array.from({ length: 20 }, (_, i) =>
        publisher.put(`k${i}`, data('x'), 0).then(
          () => 'answered',
          (error: Error) => error,
        ),
      );
      // Every write settles while the server is still paused: only the deadline can end them.
      const outcomes = (await settled(Promise.all(writes))) as { value: unknown[] };
      const elapsed = performance.now() - started;
      server.resume();
      for (const outcome of outcomes.value) {
        expect((outcome as Error).name).toBe('TimeoutError');
        expect((outcome as Error).message).toBe(
          'the conditional write got no answer within 300 ms',
        );
      }
      expect(elapsed).toBeGreaterThanOrEqual(290);
      const mapped = mapNatsError(outcomes.value[0], 'renew', 'paused');
      expect([mapped.code, mapped.retryable]).toEqual(['STORE_UNAVAILABLE', true]);
      // Once the server is back, the next write works (the late answers were dropped).
      expect(await publisher.put('after', data('y'), 0)).toBeGreaterThan(0);
    } finally {
      publisher.close();
    }
  });

  it('no stream on the subject: a retryable NoResponders at once; a closed publisher refuses', async () => {
    // A deadline far beyond the test's: only the server's "no responders" can end the write.
    const publisher = new NatsPublisher(nc, transport, '$KV.never_made.', 600_000);
    const error = await publisher.put('k', data('x'), 0).catch((e: Error) => e);
    expect((error as Error).name).toBe('NoResponders');
    expect(mapNatsError(error, 'renew', 'never_made').retryable).toBe(true);
    publisher.close();
    const closed = await publisher.put('k', data('x'), 0).catch((e: Error) => e);
    expect(mapNatsError(closed, 'renew', 'never_made').retryable).toBe(false);
  });

  it('a store closed while a renewal waits fails it at once, not at its deadline', async () => {
    // A deadline far beyond the hang guard: only the close can end the renewal in time.
    const store = await NatsStore.open(`${server.url}?bucket=closing&timeoutMs=600000`);
    const lease = (await store.tryAcquire('job', 'a', 10_000))!;
    server.pause();
    const renewing = store.renewMany([lease]);
    await sleep(50);
    void store.close();
    const error = await rejection(renewing);
    server.resume();
    expect(error.code).toBe('STORE_UNAVAILABLE');
    expect(error.message).not.toMatch(/no answer within/);
  });
});

describe('NATS conditional writes refused by the server', () => {
  const reason = natsUnavailable();
  const dir = tempDir('leasehold-nats-perm-');
  let child: ReturnType<typeof startProcess> | undefined;
  let url = '';

  beforeAll(async () => {
    if (reason) return;
    const port = await freePort();
    const config = join(dir.path, 'server.conf');
    writeFileSync(
      config,
      [
        `listen: 127.0.0.1:${port}`,
        `jetstream { store_dir: ${JSON.stringify(join(dir.path, 'js'))} }`,
        'authorization { users = [',
        '  { user: admin, password: pw }',
        '  { user: limited, password: pw, permissions: { publish: { deny: ["$KV.>"] } } }',
        '] }',
      ].join('\n'),
    );
    child = startProcess('nats-server', ['-c', config]);
    url = `nats://127.0.0.1:${port}`;
    await waitFor('nats-server with users to answer', async () => {
      const c = await transport.connect({ servers: url, user: 'admin', pass: 'pw' });
      await c.close();
      return true;
    });
  });
  afterAll(async () => {
    if (child) await stopProcess(child);
    dir.cleanup();
  });

  it.skipIf(reason !== null)(
    'a user who may not publish on the key subjects gets a non-retryable STORE_UNAVAILABLE at once, naming the permission',
    async () => {
      const admin = await NatsStore.open(
        url.replace('//', '//admin:pw@') + '?bucket=perm&timeoutMs=5000',
      );
      const limited = await NatsStore.open(
        url.replace('//', '//limited:pw@') + '?bucket=perm&timeoutMs=5000',
      );
      try {
        const lease = (await admin.tryAcquire('job', 'a', 10_000))!;
        // Renewed for longer than the grant: a renewal to an expiry already in place (same TTL in
        // the same millisecond) succeeds without writing, and would not meet the permission.
        for (const call of [
          () => limited.renew(lease, 20_000),
          () => limited.renewMany([lease, lease], 20_000),
          () => limited.tryAcquire('other', 'b', 10_000),
        ]) {
          // Refused by the server (the message says so), not ended by the 5 s deadline.
          const error = await rejection(call());
          expect([error.code, error.retryable]).toEqual(['STORE_UNAVAILABLE', false]);
          expect(error.message).toMatch(/Permissions Violation for Publish/);
          expect(error.message).toMatch(/publish and subscribe permissions/);
        }
        expect(await admin.get('job')).toMatchObject({ owner: 'a', token: 1 });
      } finally {
        await limited.close();
        await admin.close();
      }
    },
  );
});
