import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LeaseError, type WatchEvent } from '../../src/index.js';
import { PostgresStore, type PostgresStoreOptions } from '../../src/stores/postgres/index.js';
import { channelName } from '../../src/stores/postgres/postgres-sql.js';
import { freshNamespace } from '../conformance/factory.js';
import { PostgresServer, postgresUnavailable } from '../harness/postgres-server.js';
import { waitFor } from '../harness/processes.js';
import { describeServer } from '../harness/describe-server.js';

const unavailable = postgresUnavailable();

describeServer('PostgresStore.watch', unavailable, () => {
  let server: PostgresServer;
  let admin: pg.Pool;
  const stores: PostgresStore[] = [];

  beforeAll(async () => {
    server = await PostgresServer.start();
    admin = new pg.Pool({ connectionString: server.url, max: 2 });
  });
  afterAll(async () => {
    await Promise.allSettled(stores.map((s) => s.close()));
    await admin?.end();
    await server?.stop();
  });

  /** A watching store and a second one (another process, in effect) on the same table. */
  async function pair(
    options: PostgresStoreOptions = {},
  ): Promise<{ watcher: PostgresStore; other: PostgresStore; listen: string }> {
    const table = freshNamespace();
    const watcher = await PostgresStore.open(server.url, { ...options, table });
    const other = await PostgresStore.open(server.url, { table });
    stores.push(watcher, other);
    return { watcher, other, listen: `LISTEN "${channelName('public', table)}"` };
  }

  /** Resolves once a LISTEN is in place, seen from the server. */
  async function listening(listen: string): Promise<void> {
    await waitFor('LISTEN', async () => {
      const { rows } = await admin.query(
        `SELECT 1 FROM pg_stat_activity WHERE query = $1 AND state = 'idle'`,
        [listen],
      );
      return rows.length > 0;
    });
  }

  it('hears releases and batch releases under its prefix, once each, after they commit', async () => {
    const { watcher, other, listen } = await pair();
    expect(watcher.capabilities.watch).toBe(true);
    const events: WatchEvent[] = [];
    const everything: string[] = [];
    const stop = watcher.watch('jobs/', (event) => events.push(event));
    watcher.watch('', (event) => everything.push(event.resource));
    await listening(listen);

    const one = (await other.tryAcquire('jobs/1', 'a', 5000))!;
    const many = await Promise.all(
      ['jobs/2', 'jobs/3', 'other/x'].map((r) => other.tryAcquire(r, 'a', 5000)),
    );
    expect(await other.release(one)).toBe(true);
    expect(await other.releaseMany([...many.map((l) => l!), one])).toEqual([
      true,
      true,
      true,
      false,
    ]);
    await waitFor('3 events', () => events.length >= 3);
    expect(events.sort((x, y) => x.resource.localeCompare(y.resource))).toEqual([
      { type: 'released', resource: 'jobs/1' },
      { type: 'released', resource: 'jobs/2' },
      { type: 'released', resource: 'jobs/3' },
    ]);

    stop();
    await other.release((await other.tryAcquire('jobs/4', 'a', 5000))!);
    await other.release((await other.tryAcquire('zzz', 'a', 5000))!);
    // One connection delivers notifications in commit order: 'zzz' arriving means 'jobs/4' did.
    await waitFor('the marker', () => everything.includes('zzz'));
    expect(everything).toContain('jobs/4');
    expect(events).toHaveLength(3); // nothing after unsubscribing
  });

  it('reconnects when its LISTEN connection is cut, and says so', async () => {
    const problems: unknown[] = [];
    const { watcher, other, listen } = await pair({ onWatchError: (e) => problems.push(e) });
    const heard: string[] = [];
    watcher.watch('', (event) => heard.push(event.resource));
    await listening(listen);
    await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1`, [
      listen,
    ]);
    await waitFor('the watch error', () => problems.length > 0);
    expect(problems[0]).toBeInstanceOf(LeaseError);
    expect((problems[0] as LeaseError).code).toBe('STORE_UNAVAILABLE');
    await listening(listen);
    const lease = (await other.tryAcquire('after', 'a', 5000))!;
    await other.release(lease);
    await waitFor('the release after reconnecting', () => heard.includes('after'));
  });

  it('reports a throwing listener and still calls the others', async () => {
    const problems: unknown[] = [];
    const { watcher, other, listen } = await pair({ onWatchError: (e) => problems.push(e) });
    const heard: string[] = [];
    watcher.watch('', () => {
      throw new Error('listener bug');
    });
    watcher.watch('', (event) => heard.push(event.resource));
    await listening(listen);
    await other.release((await other.tryAcquire('r', 'a', 5000))!);
    await waitFor('the event', () => heard.length === 1);
    expect(problems).toEqual([new Error('listener bug')]);
  });

  it('checks its arguments and refuses after close', async () => {
    const { watcher } = await pair();
    expect(() => watcher.watch(5 as unknown as string, () => {})).toThrow(/prefix/);
    expect(() => watcher.watch('', 'x' as unknown as () => void)).toThrow(/listener/);
    await watcher.close();
    expect(() => watcher.watch('', () => {})).toThrow(/closed/);
  });
});
