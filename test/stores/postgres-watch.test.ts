import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LeaseError } from '../../src/index.js';
import { PostgresStore, type PostgresStoreOptions } from '../../src/stores/postgres/index.js';
import { channelName } from '../../src/stores/postgres/postgres-ops.js';
import { freshNamespace } from '../conformance/factory.js';
import { PostgresServer, postgresUnavailable } from '../harness/postgres-server.js';
import { waitFor } from '../harness/processes.js';
import { describeServer } from '../harness/describe-server.js';

const unavailable = postgresUnavailable();

describeServer('PostgresStore.watch', unavailable, () => {
  let server: PostgresServer;
  let admin: pg.Pool;
  const stores: PostgresStore[] = [];
  const clients: pg.PoolClient[] = [];

  beforeAll(async () => {
    server = await PostgresServer.start();
    admin = new pg.Pool({ connectionString: server.url, max: 4 });
    admin.on('error', () => {});
  });
  afterAll(async () => {
    for (const client of clients) client.release(true);
    await Promise.allSettled(stores.map((s) => s.close()));
    await admin?.end();
    await server?.stop();
  });

  /** A watching store and a second one (another process, in effect) on the same table. */
  async function pair(
    options: PostgresStoreOptions = {},
  ): Promise<{ watcher: PostgresStore; other: PostgresStore; table: string }> {
    const table = freshNamespace();
    const watcher = await PostgresStore.open(server.url, { ...options, table });
    const other = await PostgresStore.open(server.url, { table });
    stores.push(watcher, other);
    await other.init();
    return { watcher, other, table };
  }

  /** The live registrations of `table`: watcher id and prefix. */
  async function registrations(table: string): Promise<{ watcher: string; prefix: string }[]> {
    const { rows } = await admin.query(
      `SELECT watcher, prefix FROM "${table}_wait"
       WHERE until > (extract(epoch from clock_timestamp()) * 1000)::bigint ORDER BY prefix`,
    );
    return rows;
  }

  /** Resolves once a registration has committed for each of `prefixes` (by one new watcher). */
  async function registered(table: string, prefixes: string[], not: string[] = []): Promise<void> {
    await waitFor(`registration of ${JSON.stringify(prefixes)}`, async () => {
      const rows = (await registrations(table)).filter((r) => !not.includes(r.watcher));
      return prefixes.every((p) => rows.some((r) => r.prefix === p));
    });
  }

  /**
   * A plain LISTEN on the table's channel, which registers nothing: it hears every NOTIFY sent,
   * in commit order, whoever it was meant for.
   */
  async function eavesdrop(table: string): Promise<string[]> {
    const client = await admin.connect();
    clients.push(client);
    const heard: string[] = [];
    client.on('notification', (message) => heard.push(message.payload ?? ''));
    await client.query(`LISTEN "${channelName('public', table)}"`);
    return heard;
  }

  const cycle = async (store: PostgresStore, resource: string): Promise<void> => {
    expect(await store.release((await store.tryAcquire(resource, 'a', 5000))!)).toBe(true);
  };

  it('sends no NOTIFY for a release nobody waits for, and one when a watcher waits', async () => {
    const { watcher, other, table } = await pair();
    const heard = await eavesdrop(table);
    await cycle(other, 'alone');
    const events: string[] = [];
    watcher.watch('', (event) => events.push(event.resource));
    await registered(table, ['']);
    await cycle(other, 'watched');
    await waitFor('the watched release', () => events.includes('watched'));
    // Both arrive in commit order on the eavesdropper: had 'alone' been sent, it would be first.
    await waitFor('the eavesdropper', () => heard.includes('watched'));
    expect(heard).toEqual(['watched']);
    expect(events).toEqual(['watched']);
  });

  it('notifies only the prefixes registered, and stops when the last listener leaves', async () => {
    const { watcher, other, table } = await pair();
    const heard = await eavesdrop(table);
    const stopJobs = watcher.watch('jobs/', () => {});
    await registered(table, ['jobs/']);
    await cycle(other, 'other/1');
    await other.releaseMany([
      (await other.tryAcquire('other/2', 'a', 5000))!,
      (await other.tryAcquire('jobs/2', 'a', 5000))!,
    ]);
    await cycle(other, 'jobs/3');
    await waitFor('jobs/3', () => heard.includes('jobs/3'));
    expect(heard).toEqual(['jobs/2', 'jobs/3']);

    stopJobs();
    await waitFor('the registration to go', async () => (await registrations(table)).length === 0);
    await cycle(other, 'jobs/4');
    // A second watcher (another process) proves the first one's rows no longer count.
    const second = await PostgresStore.open(server.url, { table });
    stores.push(second);
    second.watch('zzz', () => {});
    await registered(table, ['zzz']);
    await cycle(other, 'zzz');
    await waitFor('zzz', () => heard.includes('zzz'));
    expect(heard).toEqual(['jobs/2', 'jobs/3', 'zzz']);
  });

  it('counts a registration only until it lapses, and releases from notify:false stores never notify', async () => {
    const { other, table } = await pair();
    const quiet = await PostgresStore.open(server.url, { table, notify: false });
    stores.push(quiet);
    const heard = await eavesdrop(table);
    const now = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;
    // A watcher that vanished long ago, and one alive (as far as its row says) for a minute more.
    await admin.query(`INSERT INTO "${table}_wait" VALUES ('gone', '', ${now} - 1)`);
    await cycle(other, 'lapsed');
    await admin.query(`INSERT INTO "${table}_wait" VALUES ('alive', 'r', ${now} + 60000)`);
    await cycle(quiet, 'r/quiet');
    await cycle(other, 'r/loud');
    await waitFor('r/loud', () => heard.includes('r/loud'));
    expect(heard).toEqual(['r/loud']);
  });

  it('clears lapsed rows of vanished watchers when it registers', async () => {
    const { watcher, table } = await pair();
    const now = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;
    await admin.query(`INSERT INTO "${table}_wait" VALUES ('gone', '', ${now} - 1)`);
    watcher.watch('x', () => {});
    await registered(table, ['x']);
    const { rows } = await admin.query(`SELECT watcher FROM "${table}_wait"`);
    expect(rows.map((r: { watcher: string }) => r.watcher)).not.toContain('gone');
    expect(rows).toHaveLength(1);
  });

  it('watches a table nothing has created yet, creating it first', async () => {
    const table = freshNamespace();
    const problems: unknown[] = [];
    const watcher = await PostgresStore.open(server.url, {
      table,
      onWatchError: (e) => problems.push(e),
    });
    stores.push(watcher);
    const heard: string[] = [];
    watcher.watch('', (event) => heard.push(event.resource));
    await registered(table, ['']);
    const other = await PostgresStore.open(server.url, { table });
    stores.push(other);
    await cycle(other, 'first');
    await waitFor('the first release', () => heard.includes('first'));
    expect(problems).toEqual([]);
  });

  it('reconnects when its LISTEN connection is cut, registers again, and says so', async () => {
    const problems: unknown[] = [];
    const { watcher, other, table } = await pair({ onWatchError: (e) => problems.push(e) });
    const heard: string[] = [];
    watcher.watch('', (event) => heard.push(event.resource));
    await registered(table, ['']);
    const [before] = await registrations(table);
    await admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE pid <> pg_backend_pid() AND query LIKE '%"${table}_wait"%' AND query LIKE 'WITH mine%'`,
    );
    await waitFor('the watch error', () => problems.length > 0);
    expect(problems[0]).toBeInstanceOf(LeaseError);
    expect((problems[0] as LeaseError).code).toBe('STORE_UNAVAILABLE');
    await registered(table, [''], [before!.watcher]);
    await cycle(other, 'after');
    await waitFor('the release after reconnecting', () => heard.includes('after'));
  });

  it('still calls the others when a listener throws, and throws its error again', async () => {
    const problems: unknown[] = [];
    const { watcher, other } = await pair({ onWatchError: (e) => problems.push(e) });
    const heard: string[] = [];
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown): void => void uncaught.push(e);
    process.prependListener('uncaughtException', onUncaught);
    try {
      await watcher.watch('', () => {
        throw new Error('listener bug');
      }).ready;
      await watcher.watch('', (event) => heard.push(event.resource)).ready;
      await cycle(other, 'r');
      await waitFor('the event', () => heard.length === 1);
      await waitFor('the error thrown again', () => uncaught.length === 1);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    expect(uncaught).toEqual([new Error('listener bug')]);
    expect(problems).toEqual([]); // a listener's bug is not the store's failure
  });

  it("settles ready once the registration of the listener's prefix committed", async () => {
    const { watcher, table } = await pair();
    await watcher.watch('a/', () => {}).ready;
    expect((await registrations(table)).map((r) => r.prefix)).toEqual(['a/']);
    await watcher.watch('b/', () => {}).ready;
    expect((await registrations(table)).map((r) => r.prefix)).toEqual(['a/', 'b/']);
  });
});
