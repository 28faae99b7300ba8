import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { LeaseClient, openStore, type LeaseStore } from '../../src/index.js';
import type { HeldLease, LeaseError } from '../../src/index.js';
import { freshNamespace } from '../conformance/factory.js';
import {
  MARIADB_DATABASE,
  mariadbUnavailable,
  startMariadb,
  type MariadbServer,
} from '../harness/mariadb-server.js';
import { freePort } from '../harness/ports.js';
import { waitFor } from '../harness/processes.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection, sleep } from '../harness/expect-error.js';

const unavailable = mariadbUnavailable();

/** Short deadlines so a silent server fails a call in well under a second. */
const FAST = { connectTimeoutMs: 600, queryTimeoutMs: 600 };

/** The next 'renewed' or 'lost' of a held lease. */
function nextOutcome(held: HeldLease): Promise<'renewed' | 'lost'> {
  return new Promise((resolve) => {
    held.once('renewed', () => resolve('renewed'));
    held.once('lost', () => resolve('lost'));
  });
}

describeServer('MySQL store faults (MariaDB)', unavailable, () => {
  let server: MariadbServer;
  const cleanup: (() => Promise<unknown>)[] = [];
  const store = async (table = freshNamespace()): Promise<LeaseStore> => {
    const opened = await openStore(server.url({ ...FAST, table }));
    cleanup.push(() => opened.close());
    return opened;
  };
  const client = (s: LeaseStore, owner: string, ttlMs: number, heartbeatMs: number) => {
    const c = new LeaseClient({ store: s, owner, ttlMs, heartbeatMs });
    cleanup.unshift(() => c.close());
    return c;
  };

  beforeAll(async () => {
    server = await startMariadb();
  });
  afterEach(async () => {
    server.resume();
    for (const step of cleanup.splice(0)) await step().catch(() => {});
  });
  afterAll(async () => {
    await server?.dispose();
  });

  it('fails to open with a retryable STORE_UNAVAILABLE when nothing listens', async () => {
    const port = await freePort();
    const error = await rejection(
      openStore(`mysql://root@127.0.0.1:${port}/${MARIADB_DATABASE}?connectTimeoutMs=600`),
    );
    expect(error.code).toBe('STORE_UNAVAILABLE');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('ECONNREFUSED');
  });

  it('a paused server fails opens and calls within the deadlines, and is usable after resume', async () => {
    const table = freshNamespace();
    const s = await store(table);
    const lease = (await s.tryAcquire('job', 'a', 10_000))!;

    server.pause();
    const atOpen = await rejection(openStore(server.url({ ...FAST, table })));
    expect(atOpen.code).toBe('STORE_UNAVAILABLE');
    expect(atOpen.retryable).toBe(true);
    for (const call of [
      () => s.renew(lease),
      () => s.renewMany([lease, { ...lease, resource: 'other' }]),
      () => s.tryAcquire('job2', 'a', 5000),
      () => s.get('job'),
    ]) {
      const midFlight = await rejection(call());
      expect(midFlight.code).toBe('STORE_UNAVAILABLE');
      expect(midFlight.retryable).toBe(true);
    }

    server.resume();
    // The connections that timed out were dropped; fresh ones work.
    await waitFor('renew after resume', async () => (await s.renew(lease)) !== null, 5000, 50);
    expect(await s.get('job')).toMatchObject({ owner: 'a', token: 1 });
  });

  it('a held lease survives a crash and restart, or is lost at its deadline; tokens keep rising', async () => {
    const table = freshNamespace();
    const s = await store(table);
    const holder = client(s, 'holder', 2000, 400);
    for (let i = 0; i < 2; i++) await (await holder.acquire('job')).release(); // tokens 1, 2
    const held = await holder.acquire('job');
    expect(held.token).toBe(3);

    await server.kill(); // SIGKILL: committed records are on disk, connections die
    const deadline = held.validUntil;
    await server.start(); // same folder, same port
    const outcome = await nextOutcome(held);
    if (outcome === 'lost') {
      // Allowed only at its deadline, never early and never "probably still held".
      expect(performance.now()).toBeGreaterThanOrEqual(held.validUntil);
      expect(held.signal.aborted).toBe(true);
    } else {
      // The client reconnected and renewed; the renewal moved the deadline on.
      expect(held.validUntil).toBeGreaterThan(deadline);
      expect(await s.get('job')).toMatchObject({ owner: 'holder', token: 3 });
    }
    await held.release().catch(() => {});

    const other = client(await store(table), 'other', 2000, 400);
    const next = await other.acquire('job', { waitMs: 5000 });
    expect(next.token).toBe(4);
  });

  it('a pause shorter than the TTL loses nothing', async () => {
    const s = await store();
    const holder = client(s, 'holder', 2000, 400);
    const held = await holder.acquire('job');
    const lost: unknown[] = [];
    held.on('lost', (e) => lost.push(e));
    const before = held.expiresAt;

    server.pause();
    await sleep(700);
    server.resume();
    await waitFor('a renewal after the pause', () => held.expiresAt > before, 3000, 20);
    let renewals = 0;
    held.on('renewed', () => renewals++);
    await waitFor('two more renewals', () => renewals >= 2, 5000, 20);

    expect(lost).toEqual([]);
    expect(held.signal.aborted).toBe(false);
    expect(held.isValid()).toBe(true);
    expect(await s.get('job')).toMatchObject({ owner: 'holder', token: 1 });
  });

  it('a pause longer than the TTL aborts the holder before resume; then another owner takes over', async () => {
    const table = freshNamespace();
    const s = await store(table);
    const holder = client(s, 'holder', 1500, 300);
    const held = await holder.acquire('job');
    let lostAt = Infinity;
    held.once('lost', () => (lostAt = performance.now()));

    server.pause();
    await waitFor('the holder to give up', () => held.signal.aborted, 4000, 10);
    const resumedAt = performance.now();
    server.resume();

    expect(lostAt).toBeLessThan(resumedAt);
    expect(lostAt).toBeGreaterThanOrEqual(held.validUntil);
    expect((held.signal.reason as LeaseError).code).toBe('LEASE_LOST');
    expect(held.isValid()).toBe(false);

    // A renewal sent during the pause may still land after resume, holding the record a little
    // longer: the newcomer waits it out and gets the next token.
    const other = client(await store(table), 'other', 1500, 300);
    const next = await other.acquire('job', { waitMs: 5000 });
    expect(next.token).toBe(2);
    expect(await s.get('job')).toMatchObject({ owner: 'other', token: 2 });
  });
});
