import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { LeaseClient, LeaseError, SqliteStore, type Lease } from '../../src/index.js';
import { tempDir } from '../harness/processes.js';

const worker = fileURLToPath(new URL('./write-lock-worker.mjs', import.meta.url));
const dir = tempDir('leasehold-write-lock-');
afterAll(() => dir.cleanup());

it('while another process holds the write lock, the loop keeps turning and the lease is lost at its deadline', async () => {
  const path = `${dir.path}/leases.db`;
  // The default busyTimeoutMs (5 s) is longer than the lock is held: renewals wait it out.
  const store = await SqliteStore.open(path);
  const client = new LeaseClient({ store, owner: 'me', ttlMs: 900, heartbeatMs: 300 });
  // The other process holds the lock until told to let go: here, once the lease was lost.
  const child = spawn(process.execPath, [worker, path], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const order: string[] = [];
  try {
    const held = (await client.tryAcquire('job'))!;
    const lost = new Promise<number>((resolve) =>
      held.signal.addEventListener('abort', () => {
        order.push('lost');
        resolve(performance.now());
      }),
    );

    expect((await lines.next()).value).toBe('locked');
    // A renewal sent now waits for the lock, asynchronously: timers keep running while it waits.
    // (One that waited synchronously would hold the loop until it gave up or landed.)
    const renewal = store.renew(held.lease).finally(() => order.push('renewal settled'));
    let turns = 0;
    const ticker = setInterval(() => turns++, 1);
    // The watchdog fires at the deadline on its own timer, while the lock is still held: it does
    // not wait for the store to answer. (Were it to, this would wait until the test times out.)
    const lostAt = await lost;
    clearInterval(ticker);
    order.push('let go');
    child.stdin!.end();
    expect((await lines.next()).value).toBe('released');
    const renewed: Lease | null = await renewal;

    expect(order).toEqual(['lost', 'let go', 'renewal settled']);
    // The loop ran again and again meanwhile (how long each step held it: `npm run bench`).
    expect(turns).toBeGreaterThanOrEqual(3);
    // Not before its deadline; exactly when is for the heartbeat tests, on a manual clock.
    expect(lostAt).toBeGreaterThanOrEqual(held.validUntil);
    expect(held.signal.reason).toBeInstanceOf(LeaseError);
    expect((held.signal.reason as LeaseError).code).toBe('LEASE_LOST');
    // The renewal sent under the lock landed once the lock was free (within busyTimeoutMs).
    expect(renewed?.token).toBe(held.token);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await client.close();
    await store.close();
  }
}, 30_000);
