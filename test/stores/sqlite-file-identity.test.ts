import { renameSync, rmSync } from 'node:fs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { LeaseClient, SqliteStore, type LeaseError } from '../../src/index.js';
import { FILE_CHECK_MS } from '../../src/stores/sqlite/sqlite-file-identity.js';
import { ManualClock } from '../../src/testing/index.js';
import { rejection, sleep } from '../harness/expect-error.js';
import { tempDir } from '../harness/processes.js';

const dir = tempDir('leasehold-sqlite-identity-');
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});
afterAll(() => dir.cleanup());

let files = 0;
async function open(
  path: string,
  options?: Parameters<typeof SqliteStore.open>[1],
): Promise<SqliteStore> {
  const store = await SqliteStore.open(path, options);
  cleanups.push(() => store.close());
  return store;
}

/** Prepares a swap of the file at `path`; the swap itself is synchronous. */
type Swap = (path: string) => Promise<() => void>;

/** `rm leases.db*`: the file and its WAL go; a connection that has them open keeps the inodes. */
const deleteFile: Swap = async (path) => () => {
  for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
};

/** A fresh, empty store file renamed over `path`, as restoring a backup would. */
const replaceFile: Swap = async (path) => {
  const fresh = `${dir.path}/fresh-${++files}.db`;
  await (await SqliteStore.open(fresh)).close();
  return () => {
    for (const suffix of ['-wal', '-shm']) rmSync(path + suffix, { force: true });
    renameSync(fresh, path);
  };
};

function expectReplacedError(error: LeaseError, operation: string): void {
  expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE', retryable: false });
  expect(error.message).toMatch(
    new RegExp(`^SQLite ${operation} failed: the file .* was deleted or replaced`),
  );
  expect(error.message).toMatch(/resets every fencing token/);
}

describe.each([
  ['deleted', deleteFile],
  ['replaced', replaceFile],
] as const)('a store file %s under a holder', (_, swap) => {
  it('fails every later call, for good, while a fresh file grants the resource again', async () => {
    const path = `${dir.path}/store-${++files}.db`;
    const holder = await open(path);
    const lease = (await holder.tryAcquire('job', 'me', 60_000))!;
    (await swap(path))();
    // A new process at the same path starts from an empty file: token 1 again.
    const newcomer = await open(path);
    expect((await newcomer.tryAcquire('job', 'them', 60_000))?.token).toBe(1);
    // The holder looks at the path at most every FILE_CHECK_MS.
    await sleep(FILE_CHECK_MS + 20);
    expectReplacedError(await rejection(holder.renew(lease)), 'renew');
    expectReplacedError(await rejection(holder.renewMany([lease])), 'renewMany');
    expectReplacedError(await rejection(holder.tryAcquire('other', 'me', 60_000)), 'tryAcquire');
    expectReplacedError(
      await rejection(holder.acquireMany(['a', 'b'], 'me', 60_000)),
      'acquireMany',
    );
    expectReplacedError(await rejection(holder.release(lease)), 'release');
    expectReplacedError(await rejection(holder.get('job')), 'get');
    expectReplacedError(await rejection(holder.list()), 'list');
    // The new file holds only its own grant.
    expect((await newcomer.list()).map((r) => [r.resource, r.owner, r.token])).toEqual([
      ['job', 'them', 1],
    ]);
  });

  it('makes the client report the lease lost at its deadline, with no renewal after the swap', async () => {
    const path = `${dir.path}/store-${++files}.db`;
    const store = await open(path);
    const client = new LeaseClient({ store, owner: 'me', ttlMs: 900, heartbeatMs: 300 });
    cleanups.push(() => client.close());
    const swapNow = await swap(path);
    const held = (await client.tryAcquire('job'))!;
    let swapped = false;
    let renewedAfterSwap = 0;
    const swappedOnce = new Promise<void>((resolve) =>
      held.on('renewed', () => {
        if (swapped) return void renewedAfterSwap++;
        swapped = true;
        // Synchronously, right after a renewal: the next one comes a heartbeat later, by which
        // time the holder's look at the path is older than FILE_CHECK_MS.
        swapNow();
        resolve();
      }),
    );
    let lostAt = Infinity;
    const lost = new Promise<LeaseError>((resolve) =>
      held.on('lost', (error) => {
        lostAt = performance.now();
        resolve(error);
      }),
    );
    await swappedOnce;
    const newcomer = await open(path);
    expect((await newcomer.tryAcquire('job', 'them', 60_000))?.token).toBe(1);

    const error = await lost;
    expect(error.code).toBe('LEASE_LOST');
    expect(held.signal.aborted).toBe(true);
    expect(renewedAfterSwap).toBe(0);
    // At the deadline the last renewal before the swap gave it: never before it. (That the
    // watchdog fires exactly then is for the heartbeat tests, on a manual clock.)
    expect(lostAt).toBeGreaterThanOrEqual(held.validUntil);
    // Lost because renewals failed (with the error below), not because the store said no.
    expect(error.message).toMatch(/renewals were failing/);
    expectReplacedError(await rejection(store.renewMany([held.lease])), 'renewMany');
    // The old file's store grants nothing more.
    expectReplacedError(await rejection(store.tryAcquire('job', 'me', 900)), 'tryAcquire');
  });
});

describe('a store file left in place', () => {
  it('serves calls before and after the path is looked at again', async () => {
    const store = await open(`${dir.path}/store-${++files}.db`);
    const lease = (await store.tryAcquire('job', 'me', 60_000))!;
    for (let i = 0; i < 50; i++) expect(await store.renew(lease)).not.toBeNull();
    await sleep(FILE_CHECK_MS + 20);
    expect(await store.renew(lease)).not.toBeNull();
  });

  it('a watch on a swapped file reports it once, as a warning', async () => {
    const path = `${dir.path}/store-${++files}.db`;
    // The watch polls on this clock; the file is looked at (a stat) in real time, at most every
    // FILE_CHECK_MS.
    const clock = new ManualClock();
    const store = await open(path, { watchPollMs: 10, clock });
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning);
    process.on('warning', onWarning);
    cleanups.push(async () => process.off('warning', onWarning));
    const stop = store.watch('', () => {});
    cleanups.push(async () => stop());
    (await deleteFile(path))();
    const replaced = () => warnings.filter((w) => /deleted or replaced/.test(w.message));
    for (let i = 0; i < 200 && replaced().length === 0; i++) {
      await clock.advance(10);
      await sleep(5);
    }
    expect(replaced()).toHaveLength(1);
    expect(replaced()[0]!.message).toMatch(/SQLite watch failed: the file/);
    // Twenty more polls find the file gone again, and say nothing more.
    for (let i = 0; i < 20; i++) await clock.advance(10);
    expect(clock.pendingTimers).toBe(1); // the watch polls on
    expect(replaced()).toHaveLength(1);
  });

  it('in-memory stores have no file to watch', async () => {
    const store = await open(':memory:');
    await sleep(FILE_CHECK_MS + 20);
    expect((await store.tryAcquire('job', 'me', 60_000))?.token).toBe(1);
  });
});
