import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore, type Lease, type LeaseError, type WatchEvent } from '../../src/index.js';
import {
  EVENTS_KEPT,
  EVENTS_PRUNE_EVERY,
  WATCHER_REFRESH_MS,
  WATCHER_STALE_MS,
} from '../../src/stores/sqlite/sqlite-ops.js';
import { ManualClock } from '../../src/testing/index.js';
import { tempDir, waitFor } from '../harness/processes.js';

const dir = tempDir('leasehold-sqlite-watch-');
const opened: { close(): unknown }[] = [];
afterAll(async () => {
  for (const handle of opened.reverse()) await handle.close();
  dir.cleanup();
});

let files = 0;
/** Two stores on one fresh file: a watcher and another handle (another process, in effect). */
async function pair(options: Parameters<typeof SqliteStore.open>[1] = {}) {
  const path = `${dir.path}/watch-${++files}.db`;
  const watcher = await SqliteStore.open(path, options);
  const other = await SqliteStore.open(path);
  opened.push(watcher, other);
  return { path, watcher, other };
}

async function held(store: SqliteStore, resources: string[]): Promise<Lease[]> {
  return (await store.acquireMany(resources, 'w', 60_000)).map((o) => o.lease!);
}

const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('SqliteStore.watch across connections', () => {
  it("hears another handle's releases under its prefix at its next poll, once each, in commit order", async () => {
    const clock = new ManualClock(); // the watcher polls when the test advances it, every 25 ms
    const { watcher, other } = await pair({ clock, watchPollMs: 25 });
    expect(watcher.capabilities.watch).toBe(true);
    const events: WatchEvent[] = [];
    watcher.watch('jobs/', (event) => events.push(event));
    await clock.advance(25); // the watch has started from the end of the log
    const [one, two, three, outside] = await held(other, ['jobs/1', 'jobs/2', 'jobs/3', 'x/1']);
    expect(await other.release(one!)).toBe(true);
    expect(await other.releaseMany([three!, outside!, two!, one!])).toEqual([
      true,
      true,
      true,
      false,
    ]);
    expect(events).toEqual([]); // another handle's releases come with a poll
    await clock.advance(25);
    const heard = [
      { type: 'released', resource: 'jobs/1' },
      { type: 'released', resource: 'jobs/3' },
      { type: 'released', resource: 'jobs/2' },
    ];
    expect(events).toEqual(heard);
    // Later polls, one after a release outside the prefix, hear nothing more.
    const [elsewhere] = await held(other, ['x/2']);
    expect(await other.release(elsewhere!)).toBe(true);
    for (let i = 0; i < 4; i++) await clock.advance(25);
    expect(events).toEqual(heard);
  });

  it('hears its own releases without waiting for a poll', async () => {
    const clock = new ManualClock(); // its poll timer never fires unless the test advances it
    const { watcher } = await pair({ clock });
    const events: string[] = [];
    watcher.watch('', (event) => events.push(event.resource));
    const [a, b, c] = await held(watcher, ['own/a', 'own/b', 'own/c']);
    await watcher.release(a!);
    await waitFor('own release', () => events.length === 1, 5000);
    await watcher.releaseMany([b!, c!]);
    await waitFor('own batch release', () => events.length === 3, 5000);
    expect(events).toEqual(['own/a', 'own/b', 'own/c']);
  });

  it('reports failed polls through onWatchError, once per run of them', async () => {
    const dir = tempDir('leasehold-sqlite-watch-');
    const problems: LeaseError[] = [];
    const watcher = await SqliteStore.open(join(dir.path, 'w.db'), {
      onWatchError: (e) => problems.push(e),
      watchPollMs: 5,
    });
    try {
      await watcher.watch('', () => {}).ready;
      rmSync(join(dir.path, 'w.db'));
      await waitFor('the report', () => problems.length > 0, 5000);
      await new Promise((r) => setTimeout(r, 100)); // about twenty more failed polls
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatchObject({ code: 'STORE_UNAVAILABLE' });
    } finally {
      await watcher.close();
      dir.cleanup();
    }
  });
});

describe('SqliteStore.watch polling', () => {
  it('polls every watchPollMs only while someone listens, and not after close', async () => {
    const clock = new ManualClock();
    const { watcher, other } = await pair({ clock, watchPollMs: 1000 });
    const events: string[] = [];
    expect(clock.pendingTimers).toBe(0);
    const stopA = watcher.watch('', (event) => events.push(event.resource));
    const stopB = watcher.watch('p/', () => {});
    expect(clock.pendingTimers).toBe(1);

    const [lease] = await held(other, ['p/1']);
    await other.release(lease!);
    await clock.advance(999);
    expect(events).toEqual([]);
    await clock.advance(1);
    expect(events).toEqual(['p/1']);

    stopA();
    expect(clock.pendingTimers).toBe(1);
    stopB();
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(5000);
    expect(clock.pendingTimers).toBe(0);

    // Watching again starts from the end of the log: nothing from while nobody listened.
    const [missed] = await held(other, ['p/2']);
    await other.release(missed!);
    const again: string[] = [];
    watcher.watch('', (event) => again.push(event.resource));
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(1000);
    expect(again).toEqual([]);

    await watcher.close();
    expect(clock.pendingTimers).toBe(0);
  });

  it('reads a long backlog in chunks until it has all of it', async () => {
    const clock = new ManualClock();
    const { watcher, other } = await pair({ clock });
    const events: string[] = [];
    watcher.watch('', (event) => events.push(event.resource));
    const names = Array.from({ length: 2500 }, (_, i) => `b/${i}`);
    expect(await other.releaseMany(await held(other, names))).toEqual(names.map(() => true));
    await clock.advance(25);
    for (let i = 0; i < 10 && events.length < names.length; i++) await settle();
    expect(events).toEqual(names);
  });

  it('keeps the release log near its bound by pruning old entries in ranges', async () => {
    const { path, watcher } = await pair();
    watcher.watch('none/', () => {}); // releases are logged only while someone watches
    const total = EVENTS_KEPT + 3 * EVENTS_PRUNE_EVERY;
    for (let start = 0; start < total; start += 1000) {
      const names = Array.from(
        { length: Math.min(1000, total - start) },
        (_, i) => `p/${start + i}`,
      );
      await watcher.releaseMany(await held(watcher, names));
    }
    const db = new Database(path, { readonly: true });
    opened.push(db);
    const log = db
      .prepare(
        'SELECT count(*) AS count, min(seq) AS first, max(seq) AS last FROM leasehold_leases_events',
      )
      .get() as { count: number; first: number; last: number };
    expect(log.last).toBe(total);
    const lastPrune = Math.floor(total / EVENTS_PRUNE_EVERY) * EVENTS_PRUNE_EVERY;
    expect(log.first).toBe(lastPrune - EVENTS_KEPT + 1);
    expect(log.count).toBeLessThanOrEqual(EVENTS_KEPT + EVENTS_PRUNE_EVERY);
  });
});

/** Rows of the release log and of the watchers table, read on a connection of the test's own. */
function tables(path: string) {
  const db = new Database(path, { readonly: true });
  opened.push(db);
  return {
    logged: () =>
      (
        db.prepare('SELECT resource FROM leasehold_leases_events ORDER BY seq').all() as {
          resource: string;
        }[]
      ).map((r) => r.resource),
    watchers: () =>
      db.prepare('SELECT id, seen_at AS seenAt FROM leasehold_leases_watchers').all() as {
        id: string;
        seenAt: number;
      }[],
  };
}

describe('SqliteStore release log, written only while someone watches', () => {
  it('logs nothing while no store watches the file, and every release once one does', async () => {
    const { path, watcher, other } = await pair();
    const read = tables(path);
    const [a, b, c] = await held(other, ['q/a', 'q/b', 'q/c']);
    expect(await other.release(a!)).toBe(true);
    expect(read.logged()).toEqual([]);
    expect(read.watchers()).toEqual([]);

    const heard: string[] = [];
    const stop = watcher.watch('q/', (event) => heard.push(event.resource));
    expect(read.watchers()).toHaveLength(1);
    expect(await other.release(b!)).toBe(true);
    await waitFor('q/b', () => heard.length === 1, 5000);
    expect(heard).toEqual(['q/b']);
    expect(read.logged()).toEqual(['q/b']);

    stop(); // the last listener: its row goes, and with it the log's writes
    expect(read.watchers()).toEqual([]);
    expect(await other.release(c!)).toBe(true);
    expect(read.logged()).toEqual(['q/b']);
  });

  it("deletes rows no watcher marked for WATCHER_STALE_MS (a dead process's), not live ones", async () => {
    const clock = new ManualClock();
    const { path, watcher, other } = await pair({ clock });
    const read = tables(path);
    const writer = new Database(path);
    opened.push(writer);
    const now = clock.now();
    const insert = writer.prepare('INSERT INTO leasehold_leases_watchers VALUES (?, ?)');
    insert.run('dead', now - WATCHER_STALE_MS - 1);
    insert.run('alive', now - WATCHER_STALE_MS + 60_000);
    // A dead watcher's row alone still makes releases logged: the cost of a crash, not a loss.
    const [a] = await held(other, ['s/a']);
    await other.release(a!);
    expect(read.logged()).toEqual(['s/a']);

    watcher.watch('', () => {});
    const rows = read.watchers();
    expect(rows).toHaveLength(2);
    expect(rows.map((r) => r.id)).toContain('alive'); // 'dead' went as this watcher wrote its own
    const own = rows.find((r) => r.id !== 'alive')!;
    expect(own.seenAt).toBe(now);

    // Marked again once WATCHER_REFRESH_MS have passed; 'alive', unmarked, goes stale meanwhile.
    await clock.advance(WATCHER_REFRESH_MS + 60_000);
    expect(read.watchers()).toEqual([{ id: own.id, seenAt: clock.now() }]);
  });

  it('writes its row again when it was deleted, and warns that releases may have been missed', async () => {
    const clock = new ManualClock();
    const { path, watcher, other } = await pair({ clock, watchPollMs: 1000 });
    const read = tables(path);
    const writer = new Database(path);
    opened.push(writer);
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      const heard: string[] = [];
      watcher.watch('', (event) => heard.push(event.resource));
      // What another watcher does to a row it finds stale (this process stopped, say).
      writer.exec('DELETE FROM leasehold_leases_watchers');
      const [lost, found] = await held(other, ['g/lost', 'g/found']);
      await other.release(lost!); // no row: not logged, so never heard
      await clock.advance(WATCHER_REFRESH_MS);
      expect(read.watchers()).toHaveLength(1);
      await other.release(found!);
      await clock.advance(1000);
      expect(heard).toEqual(['g/found']);
      await waitFor('a warning', () => warnings.length > 0, 5000);
      expect(warnings[0]).toMatch(
        /row in the watchers table was gone .* may not have been reported/,
      );
    } finally {
      process.off('warning', onWarning);
    }
  });
});
