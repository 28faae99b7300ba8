import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { diagnoseStore, ErrorCode, type Diagnosis } from '../../src/index.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';
import { PostgresServer, postgresUnavailable } from '../harness/postgres-server.js';
import { waitFor } from '../harness/processes.js';

const unavailable = postgresUnavailable();

/** Both standbys synchronous, every commit flushed: nothing to report. */
const CLEAN = Object.freeze({
  fsync: 'on',
  full_page_writes: 'on',
  synchronous_commit: 'on',
  synchronous_standby_names: 'FIRST 2 (standby1, standby2)',
});

describeServer('PostgreSQL doctor', unavailable, () => {
  let primary: PostgresServer;
  let standby1: PostgresServer;
  let standby2: PostgresServer;
  let admin: pg.Pool;

  /** What `diagnoseStore` says of the server at `url`, through a store of its own. */
  const diagnose = async (url = primary.url): Promise<Diagnosis> => {
    const store = await PostgresStore.open(url, { statementTimeoutMs: 2000 });
    try {
      return await diagnoseStore(store);
    } finally {
      await store.close();
    }
  };
  const levels = (diagnosis: Diagnosis): [string, string][] =>
    diagnosis.findings.map((f) => [f.id, f.level]);
  const only = (diagnosis: Diagnosis, id: string) => {
    const found = diagnosis.findings.filter((f) => f.id === id);
    expect(found).toHaveLength(1);
    return found[0]!;
  };

  /** The standbys' sync_state on the primary, by name. */
  const syncStates = async (): Promise<Record<string, string>> => {
    const { rows } = await admin.query(
      'SELECT application_name AS name, sync_state FROM pg_stat_replication',
    );
    return Object.fromEntries(rows.map((row) => [row.name, row.sync_state]));
  };

  /**
   * `ALTER SYSTEM` for each of `settings` (over `CLEAN`), then a reload, and waits until a new
   * session sees them all and the standbys report `states`.
   */
  const configure = async (
    settings: Record<string, string> = {},
    states: Record<string, string> = { standby1: 'sync', standby2: 'sync' },
  ): Promise<void> => {
    const wanted: Record<string, string> = { ...CLEAN, ...settings };
    for (const [name, value] of Object.entries(wanted))
      await admin.query(`ALTER SYSTEM SET ${name} = '${value.replace(/'/g, "''")}'`);
    await admin.query('SELECT pg_reload_conf()');
    await waitFor('the new settings', async () => {
      const client = new pg.Client({ connectionString: primary.url });
      client.on('error', () => {});
      await client.connect();
      try {
        for (const [name, value] of Object.entries(wanted)) {
          const { rows } = await client.query('SELECT current_setting($1) AS v', [name]);
          if (rows[0].v !== value) return false;
        }
        return true;
      } finally {
        await client.end();
      }
    });
    await waitFor(`standbys ${JSON.stringify(states)}`, async () => {
      const seen = await syncStates();
      return Object.entries(states).every(([name, state]) => seen[name] === state);
    });
  };

  beforeAll(async () => {
    // fsync and full_page_writes off the command line, so ALTER SYSTEM can turn them on and off.
    primary = await PostgresServer.start({ settings: { fsync: null, full_page_writes: null } });
    // Both with the harness defaults on their command line: fsync=off, full_page_writes=off.
    [standby1, standby2] = await Promise.all([
      PostgresServer.startStandby(primary, 'standby1'),
      PostgresServer.startStandby(primary, 'standby2'),
    ]);
    admin = new pg.Pool({ connectionString: primary.url, max: 2 });
    admin.on('error', () => {});
    await admin.query('CREATE ROLE app LOGIN');
  });
  afterAll(async () => {
    await admin?.end();
    await Promise.allSettled([standby1?.stop(), standby2?.stop()]);
    await primary?.stop();
  });

  it('reports fsync and full_page_writes off, as the harness runs tests, and asynchronous standbys', async () => {
    await configure(
      { fsync: 'off', full_page_writes: 'off', synchronous_standby_names: '' },
      { standby1: 'async', standby2: 'async' },
    );
    const diagnosis = await diagnose();
    expect(levels(diagnosis)).toEqual([
      ['postgres.async-standby', 'unsafe'],
      ['postgres.fsync-off', 'unsafe'],
      ['postgres.full-page-writes-off', 'unsafe'],
    ]);
    expect(only(diagnosis, 'postgres.fsync-off')).toMatchObject({
      observed: 'fsync = off',
      fix: expect.stringContaining('fsync = on'),
    });
    expect(only(diagnosis, 'postgres.full-page-writes-off').observed).toBe(
      'full_page_writes = off',
    );
    const standbys = only(diagnosis, 'postgres.async-standby');
    expect(standbys.observed).toBe(
      "pg_stat_replication: standby1 (127.0.0.1) sync_state = async, standby2 (127.0.0.1) sync_state = async; synchronous_standby_names = ''",
    );
    expect(standbys.fix).toContain('synchronous_standby_names');
    expect(diagnosis.checked).toEqual([
      'SHOW fsync',
      'SHOW full_page_writes',
      'SHOW synchronous_commit',
      'SHOW synchronous_standby_names',
      'pg_is_in_recovery()',
      'pg_stat_replication',
    ]);
  });

  it('reports nothing for a durable primary whose standbys are all synchronous, and writes nothing', async () => {
    await configure();
    const store = await PostgresStore.open(primary.url, { table: 'doctor_untouched' });
    try {
      expect((await diagnoseStore(store)).findings).toEqual([]);
    } finally {
      await store.close();
    }
    // Neither the lease table nor its schema was created: diagnose only reads.
    const { rows } = await admin.query(
      "SELECT to_regclass('public.doctor_untouched') AS t, to_regclass('public.doctor_untouched_meta') AS m",
    );
    expect(rows[0]).toEqual({ t: null, m: null });
  });

  it('reports synchronous_commit = off as unsafe', async () => {
    await configure({ synchronous_commit: 'off' });
    const diagnosis = await diagnose();
    expect(levels(diagnosis)).toEqual([['postgres.synchronous-commit-off', 'unsafe']]);
    expect(diagnosis.findings[0]!.observed).toBe(
      "synchronous_commit = off (as this store's sessions see it)",
    );
  });

  it('reads synchronous_commit as the store role sees it (ALTER ROLE … SET)', async () => {
    await configure();
    await admin.query('ALTER ROLE app SET synchronous_commit = off');
    try {
      const url = `postgres://app@127.0.0.1:${primary.port}/postgres`;
      // pg_stat_replication hides sync_state from app: an unknown beside it.
      expect(levels(await diagnose(url))).toEqual([
        ['postgres.synchronous-commit-off', 'unsafe'],
        ['postgres.replication-unreadable', 'unknown'],
      ]);
    } finally {
      await admin.query('ALTER ROLE app RESET synchronous_commit');
    }
  });

  it('reports synchronous_commit = local with synchronous standbys as unsafe, remote_write as a warning', async () => {
    await configure({ synchronous_commit: 'local' });
    const local = await diagnose();
    expect(levels(local)).toEqual([['postgres.synchronous-commit-local', 'unsafe']]);
    expect(local.findings[0]!.observed).toBe(
      "synchronous_commit = local, synchronous_standby_names = 'FIRST 2 (standby1, standby2)'",
    );

    await configure({ synchronous_commit: 'remote_write' });
    const remoteWrite = await diagnose();
    expect(levels(remoteWrite)).toEqual([['postgres.synchronous-commit-remote-write', 'warning']]);
    expect(remoteWrite.findings[0]!.fix).toContain('synchronous_commit = on');

    await configure({ synchronous_commit: 'remote_apply' });
    expect((await diagnose()).findings).toEqual([]);
  });

  it('says nothing of synchronous_commit = local without synchronous standbys (it means on)', async () => {
    await configure(
      { synchronous_commit: 'local', synchronous_standby_names: '' },
      { standby1: 'async', standby2: 'async' },
    );
    expect(levels(await diagnose())).toEqual([['postgres.async-standby', 'unsafe']]);
  });

  it('reports a potential standby (FIRST 1 of 2) as asynchronous', async () => {
    await configure(
      { synchronous_standby_names: 'FIRST 1 (standby1, standby2)' },
      { standby1: 'sync', standby2: 'potential' },
    );
    const diagnosis = await diagnose();
    expect(levels(diagnosis)).toEqual([['postgres.async-standby', 'unsafe']]);
    expect(diagnosis.findings[0]!.observed).toBe(
      "pg_stat_replication: standby2 (127.0.0.1) sync_state = potential; synchronous_standby_names = 'FIRST 1 (standby1, standby2)'",
    );
  });

  it('reports quorum standbys a commit need not reach (ANY 1 of 2), not ANY 2 of 2', async () => {
    await configure(
      { synchronous_standby_names: 'ANY 1 (standby1, standby2)' },
      { standby1: 'quorum', standby2: 'quorum' },
    );
    const diagnosis = await diagnose();
    expect(levels(diagnosis)).toEqual([['postgres.quorum-standby', 'unsafe']]);
    expect(diagnosis.findings[0]!.observed).toBe(
      "synchronous_standby_names = 'ANY 1 (standby1, standby2)': each commit waits for 1 of 2 quorum standbys (standby1, standby2)",
    );
    expect(diagnosis.findings[0]!.fix).toContain('ANY 2');

    await configure(
      { synchronous_standby_names: 'ANY 2 (standby1, standby2)' },
      { standby1: 'quorum', standby2: 'quorum' },
    );
    expect((await diagnose()).findings).toEqual([]);
  });

  it('reports a standby as a warning, with its own settings', async () => {
    const diagnosis = await diagnose(standby1.url);
    expect(levels(diagnosis)).toEqual([
      ['postgres.fsync-off', 'unsafe'],
      ['postgres.full-page-writes-off', 'unsafe'],
      ['postgres.standby', 'warning'],
    ]);
    expect(only(diagnosis, 'postgres.standby').observed).toBe(
      'pg_is_in_recovery() = true (a standby)',
    );
  });

  it('reports replication hidden from an unprivileged role as unknown, unless no standby is synchronous', async () => {
    const url = `postgres://app@127.0.0.1:${primary.port}/postgres`;
    await configure();
    const hidden = await diagnose(url);
    expect(levels(hidden)).toEqual([['postgres.replication-unreadable', 'unknown']]);
    expect(hidden.findings[0]!.observed).toBe(
      'pg_stat_replication lists 2 standby(s) (standby1, standby2) but hides their sync_state from role app',
    );
    expect(hidden.findings[0]!.fix).toContain('GRANT pg_read_all_stats TO app');

    // With no synchronous standbys named, every standby is asynchronous: known without sync_state.
    await configure({ synchronous_standby_names: '' }, { standby1: 'async', standby2: 'async' });
    const known = await diagnose(url);
    expect(levels(known)).toEqual([['postgres.async-standby', 'unsafe']]);
    expect(known.findings[0]!.observed).toContain('standby1 sync_state = hidden');

    await admin.query('GRANT pg_read_all_stats TO app');
    try {
      await configure();
      expect((await diagnose(url)).findings).toEqual([]);
    } finally {
      await admin.query('REVOKE pg_read_all_stats FROM app');
    }
  });

  it('reports a pg_stat_replication this role may not read as unknown, not as a failure', async () => {
    await configure();
    await admin.query('REVOKE SELECT ON pg_catalog.pg_stat_replication FROM PUBLIC');
    try {
      const diagnosis = await diagnose(`postgres://app@127.0.0.1:${primary.port}/postgres`);
      expect(levels(diagnosis)).toEqual([['postgres.replication-unreadable', 'unknown']]);
      expect(diagnosis.findings[0]!.observed).toBe(
        'pg_stat_replication: permission denied for view pg_stat_replication',
      );
    } finally {
      await admin.query('GRANT SELECT ON pg_catalog.pg_stat_replication TO PUBLIC');
    }
  });

  it('fails with STORE_UNAVAILABLE within the call deadline on a paused server', async () => {
    await configure({ synchronous_standby_names: '' }, { standby1: 'async', standby2: 'async' });
    const store = await PostgresStore.open(standby2.url, { statementTimeoutMs: 300 });
    standby2.pause();
    try {
      const error = await rejection(diagnoseStore(store), 5000);
      expect(error.code).toBe(ErrorCode.STORE_UNAVAILABLE);
      expect(error.message).toContain('diagnose failed: no answer within 300 ms');
    } finally {
      standby2.resume();
      await store.close();
    }
  });

  it('fails with STORE_UNAVAILABLE on a stopped server, without the password', async () => {
    // Nothing waits for standby2 any more: stopping it holds no commit on the primary.
    await configure({ synchronous_standby_names: '' }, { standby1: 'async', standby2: 'async' });
    const store = await PostgresStore.open(
      `postgres://postgres:hunter2@127.0.0.1:${standby2.port}/postgres`,
    );
    try {
      await standby2.stop();
      const error = await rejection(diagnoseStore(store), 5000);
      expect(error.code).toBe(ErrorCode.STORE_UNAVAILABLE);
      expect(error.message).toMatch(/^PostgreSQL \(.*\) diagnose failed: .*ECONNREFUSED/);
      expect(error.message).not.toContain('hunter2');
    } finally {
      await store.close();
    }
  });
});
