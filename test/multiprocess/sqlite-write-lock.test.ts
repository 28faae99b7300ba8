import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { LeaseClient, LeaseError, SqliteStore, type Lease } from '../../src/index.js';
import { tempDir } from '../harness/processes.js';

const worker = fileURLToPath(new URL('./write-lock-worker.mjs', import.meta.url));
const dir = tempDir('leasehold-write-lock-');
afterAll(() => dir.cleanup());

const HOLD_MS = 3000;

/** Ticks of a 10 ms interval and the longest gap between them, from `start` to `stop`. */
function loopMeter() {
  let last = performance.now();
  const meter = { ticks: 0, longestGapMs: 0, stop: () => clearInterval(timer) };
  const timer = setInterval(() => {
    const now = performance.now();
    meter.ticks++;
    meter.longestGapMs = Math.max(meter.longestGapMs, now - last);
    last = now;
  }, 10);
  return meter;
}

it('while another process holds the write lock, the loop keeps turning and the lease is lost at its deadline', async () => {
  const path = `${dir.path}/leases.db`;
  // The default busyTimeoutMs (5 s) is longer than the lock is held: renewals wait it out.
  const store = await SqliteStore.open(path);
  const client = new LeaseClient({ store, owner: 'me', ttlMs: 900, heartbeatMs: 300 });
  const child = spawn(process.execPath, [worker, path, String(HOLD_MS)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  try {
    const held = (await client.tryAcquire('job'))!;
    let abortedAt: number | undefined;
    held.signal.addEventListener('abort', () => (abortedAt = performance.now()));

    expect((await lines.next()).value).toBe('locked');
    const meter = loopMeter();
    const lockedAt = performance.now();
    // A renewal sent now waits for the lock, asynchronously.
    let renewSettledAt: number | undefined;
    const renewal = store.renew(held.lease).finally(() => (renewSettledAt = performance.now()));
    expect((await lines.next()).value).toBe('released');
    const releasedAt = performance.now();
    meter.stop();
    const renewed: Lease | null = await renewal;

    // The loop was free: a blocked loop ticks about once in the 3 s, a free one about 300 times
    // (fewer when the machine is loaded and timers wake late).
    expect(meter.ticks, `ticks in ${Math.round(releasedAt - lockedAt)} ms`).toBeGreaterThanOrEqual(
      50,
    );
    expect(meter.longestGapMs).toBeLessThan(1000);
    // The watchdog fired at the deadline, while the lock was still held, not when it was let go.
    expect(abortedAt).toBeDefined();
    expect(abortedAt!).toBeLessThan(releasedAt);
    expect(abortedAt! - held.validUntil).toBeLessThan(1000);
    expect(held.signal.reason).toBeInstanceOf(LeaseError);
    expect((held.signal.reason as LeaseError).code).toBe('LEASE_LOST');
    // The renewal sent under the lock was still waiting when the lease was lost, and landed once
    // the lock was free (3 s is within busyTimeoutMs).
    expect(renewSettledAt!).toBeGreaterThan(abortedAt!);
    expect(renewed?.token).toBe(held.token);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await client.close();
    await store.close();
  }
}, 30_000);
