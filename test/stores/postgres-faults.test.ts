import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import type { LeaseError } from '../../src/index.js';
import { LeaseClient, openStore, type HeldLease } from '../../src/index.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { freshNamespace } from '../conformance/factory.js';
import { PostgresServer, postgresUnavailable } from '../harness/postgres-server.js';
import { freePort } from '../harness/ports.js';
import { waitFor } from '../harness/processes.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection, sleep } from '../harness/expect-error.js';

const unavailable = postgresUnavailable();

/** Short deadlines so faults surface quickly: a silent server fails a call in ~0.5–1 s. */
const FAST = { statementTimeoutMs: 500, connectTimeoutMs: 1000 };

/** The next 'renewed' or 'lost' of a held lease. */
function nextOutcome(held: HeldLease): Promise<'renewed' | 'lost'> {
  return new Promise((resolve) => {
    held.once('renewed', () => resolve('renewed'));
    held.once('lost', () => resolve('lost'));
  });
}

describeServer('PostgreSQL faults', unavailable, () => {
  let server: PostgresServer;
  const cleanup: (() => Promise<unknown>)[] = [];
  const store = async (table = freshNamespace()): Promise<PostgresStore> => {
    const opened = await PostgresStore.open(server.url, { ...FAST, table });
    cleanup.push(() => opened.close());
    return opened;
  };
  const client = (s: PostgresStore, owner: string, ttlMs: number, heartbeatMs: number) => {
    const c = new LeaseClient({ store: s, owner, ttlMs, heartbeatMs });
    cleanup.unshift(() => c.close());
    return c;
  };

  beforeAll(async () => {
    server = await PostgresServer.start();
  });
  afterEach(async () => {
    server.resume();
    for (const step of cleanup.splice(0)) await step().catch(() => {});
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('a held lease survives a server crash and restart, and tokens keep rising', async () => {
    const table = freshNamespace();
    const s = await store(table);
    const holder = client(s, 'holder', 3000, 500);
    for (let i = 0; i < 2; i++) await (await holder.acquire('job')).release(); // tokens 1, 2
    const held = await holder.acquire('job');
    expect(held.token).toBe(3);

    await server.restart(); // SIGKILL of every server process, then start on the same folder
    const outcome = await nextOutcome(held);
    if (outcome === 'lost') {
      // Allowed only at its deadline, never early and never "probably still held".
      expect(performance.now()).toBeGreaterThanOrEqual(held.validUntil);
    } else {
      expect(held.state).not.toBe('lost');
      expect(await s.get('job')).toMatchObject({ owner: 'holder', token: 3 });
    }
    await held.release().catch(() => {});

    const other = client(await store(table), 'other', 3000, 500);
    const next = await other.acquire('job', { waitMs: 5000 });
    expect(next.token).toBe(4);
  });

  it('renewals resume after a pause shorter than the TTL, and nothing is lost', async () => {
    const s = await store();
    const holder = client(s, 'holder', 3000, 500);
    const held = await holder.acquire('job');
    const risks: string[] = [];
    held.on('at-risk', (reason) => risks.push(reason));

    server.pause();
    await sleep(1200);
    server.resume();
    expect(await nextOutcome(held)).toBe('renewed');

    expect(risks.some((r) => r.includes('renewal failed'))).toBe(true); // the pause was felt
    expect(held.signal.aborted).toBe(false);
    expect(held.isValid()).toBe(true);
    expect(await s.get('job')).toMatchObject({ owner: 'holder', token: held.token });
  });

  it('a pause longer than the TTL aborts the holder before the server returns; a peer takes over', async () => {
    const table = freshNamespace();
    const holder = client(await store(table), 'holder', 1500, 300);
    const held = await holder.acquire('job');
    let paused = false;
    let abortedWhilePaused: boolean | undefined;
    let abortedAt = 0;
    held.signal.addEventListener('abort', () => {
      abortedWhilePaused = paused;
      abortedAt = performance.now();
    });

    paused = true;
    server.pause();
    await waitFor('the holder to give up', () => held.signal.aborted, 10_000);
    paused = false;
    server.resume();

    expect(abortedWhilePaused).toBe(true);
    expect(abortedAt).toBeGreaterThanOrEqual(held.validUntil); // at its deadline, not before
    expect((held.signal.reason as LeaseError).code).toBe('LEASE_LOST');
    expect(held.isValid()).toBe(false);

    const peer = client(await store(table), 'peer', 1500, 300);
    const taken = await peer.acquire('job', { waitMs: 10_000 });
    expect(taken.token).toBe(held.token + 1);
  });

  it('an unreachable server gives STORE_UNAVAILABLE, not a hang', async () => {
    // Nothing listens: refused at once.
    const port = await freePort();
    const closed = await openStore(
      `postgres://postgres@127.0.0.1:${port}/postgres?connectTimeoutMs=1000`,
    );
    cleanup.push(() => closed.close());
    const refused = await rejection(
      client(closed as PostgresStore, 'a', 3000, 500).tryAcquire('r'),
    );
    expect([refused.code, refused.retryable]).toEqual(['STORE_UNAVAILABLE', true]);

    // A paused server accepts TCP connections but never answers.
    const busy = await store();
    const lease = (await busy.tryAcquire('r', 'a', 5000))!; // table ready, a pooled connection open
    const fresh = await store();
    server.pause();
    const midFlight = await rejection(busy.renew(lease));
    expect([midFlight.code, midFlight.retryable]).toEqual(['STORE_UNAVAILABLE', true]);
    expect(midFlight.message).toMatch(/timeout/i);
    const connecting = await rejection(fresh.init());
    expect([connecting.code, connecting.retryable]).toEqual(['STORE_UNAVAILABLE', true]);
    expect(connecting.message).toMatch(/timeout/i);
    server.resume();

    expect(await busy.renew(lease)).toMatchObject({ owner: 'a', token: 1 });
    await fresh.init();
  });
});
