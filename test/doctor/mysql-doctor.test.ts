import mysql from 'mysql2/promise';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { diagnoseStore, ErrorCode, openStore, type Diagnosis } from '../../src/index.js';
import { MysqlStore } from '../../src/stores/mysql/index.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';
import {
  MARIADB_DATABASE,
  mariadbUnavailable,
  replicate,
  startMariadb,
  type MariadbServer,
} from '../harness/mariadb-server.js';
import { waitFor } from '../harness/processes.js';

const unavailable = mariadbUnavailable();

describeServer('MySQL doctor (MariaDB)', unavailable, () => {
  let primary: MariadbServer;
  let replica: MariadbServer;
  let onPrimary: mysql.Pool;
  let onReplica: mysql.Pool;
  const pools: mysql.Pool[] = [];

  /** A pool as a user would hand it to `new MysqlStore` (which, unlike `open`, creates nothing). */
  const pool = (server: MariadbServer, options: mysql.PoolOptions = {}): mysql.Pool => {
    const created = mysql.createPool({
      host: '127.0.0.1',
      port: server.port,
      user: 'root',
      database: MARIADB_DATABASE,
      multipleStatements: true,
      ...options,
    });
    pools.push(created);
    return created;
  };
  /** What `diagnoseStore` says of `server`, through a store on a pool of its own. */
  const diagnose = async (
    server: MariadbServer,
    options: mysql.PoolOptions = {},
  ): Promise<Diagnosis> => {
    const store = new MysqlStore(pool(server, options));
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
  const semiSync = async (): Promise<Record<string, string>> => {
    const [rows] = await onPrimary.query(`SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_%'`);
    return Object.fromEntries(
      (rows as { Variable_name: string; Value: string }[]).map((r) => [r.Variable_name, r.Value]),
    );
  };
  /** Restarts the replica's IO thread, so it registers again as (semi-synchronous or not). */
  const semiSyncReplica = async (enabled: boolean): Promise<void> => {
    await onReplica.query(
      `SET GLOBAL rpl_semi_sync_slave_enabled = ${enabled ? 'ON' : 'OFF'}; STOP SLAVE IO_THREAD; START SLAVE IO_THREAD`,
    );
    await waitFor(`the replica to connect ${enabled ? '' : 'not '}semi-synchronously`, async () => {
      const now = await semiSync();
      const [hosts] = await onPrimary.query('SHOW SLAVE HOSTS');
      return (
        (hosts as unknown[]).length === 1 &&
        now.Rpl_semi_sync_master_clients === (enabled ? '1' : '0') &&
        (!enabled || now.Rpl_semi_sync_master_status === 'ON')
      );
    });
  };
  /** The primary durable and semi-synchronous, its replica acknowledging: nothing to report. */
  const clean = async (): Promise<void> => {
    // Off and on again: a primary that fell back to asynchronous replication starts afresh.
    await onPrimary.query(
      `SET GLOBAL sync_binlog = 1, innodb_flush_log_at_trx_commit = 1, read_only = OFF,
         rpl_semi_sync_master_enabled = OFF, rpl_semi_sync_master_timeout = 10000;
       SET GLOBAL rpl_semi_sync_master_enabled = ON`,
    );
    await onReplica.query('SET GLOBAL read_only = OFF');
    await semiSyncReplica(true);
  };

  beforeAll(async () => {
    // The primary durable but for sync_binlog (0 by default); the replica as the harness runs
    // tests: innodb_flush_log_at_trx_commit=2, innodb_flush_method=nosync, innodb_doublewrite=0.
    [primary, replica] = await Promise.all([
      startMariadb({
        logBin: true,
        serverId: 1,
        args: [
          '--innodb-flush-log-at-trx-commit=1',
          '--innodb-flush-method=fsync',
          '--innodb-doublewrite=1',
        ],
      }),
      startMariadb({ serverId: 2 }),
    ]);
    await replicate(replica, primary);
    onPrimary = pool(primary);
    onReplica = pool(replica);
  });
  afterAll(async () => {
    await Promise.allSettled(pools.map((p) => p.end()));
    await Promise.allSettled([replica?.dispose(), primary?.dispose()]);
  });

  it('reports the harness settings on a writable replica as unsafe', async () => {
    const diagnosis = await diagnose(replica);
    expect(levels(diagnosis)).toEqual([
      ['mysql.doublewrite-off', 'unsafe'],
      ['mysql.flush-log-at-trx-commit', 'unsafe'],
      ['mysql.flush-method-nosync', 'unsafe'],
      ['mysql.writable-replica', 'unsafe'],
    ]);
    expect(only(diagnosis, 'mysql.flush-log-at-trx-commit')).toMatchObject({
      observed: 'innodb_flush_log_at_trx_commit = 2',
      risk: expect.stringContaining('OS crash or power loss'),
      fix: expect.stringContaining('innodb_flush_log_at_trx_commit = 1'),
    });
    expect(only(diagnosis, 'mysql.flush-method-nosync').observed).toBe(
      'innodb_flush_method = nosync',
    );
    expect(only(diagnosis, 'mysql.doublewrite-off').observed).toBe('innodb_doublewrite = OFF');
    expect(only(diagnosis, 'mysql.writable-replica').observed).toBe(
      `SHOW ALL SLAVES STATUS: a replica from 127.0.0.1:${primary.port} (IO running Yes, SQL running Yes); read_only = OFF`,
    );
  });

  it('reports a read-only replica as a warning', async () => {
    await onReplica.query('SET GLOBAL read_only = ON');
    try {
      const diagnosis = await diagnose(replica);
      expect(levels(diagnosis)).toEqual([
        ['mysql.doublewrite-off', 'unsafe'],
        ['mysql.flush-log-at-trx-commit', 'unsafe'],
        ['mysql.flush-method-nosync', 'unsafe'],
        ['mysql.replica', 'warning'],
      ]);
      expect(only(diagnosis, 'mysql.replica').observed).toMatch(/; read_only = ON$/);
    } finally {
      await onReplica.query('SET GLOBAL read_only = OFF');
    }
  });

  it('reports sync_binlog = 0 and an asynchronous replica on the primary', async () => {
    const diagnosis = await diagnose(primary);
    expect(levels(diagnosis)).toEqual([
      ['mysql.async-replica', 'unsafe'],
      ['mysql.sync-binlog', 'unsafe'],
    ]);
    expect(only(diagnosis, 'mysql.sync-binlog')).toMatchObject({
      observed: 'log_bin = ON, sync_binlog = 0',
      fix: expect.stringContaining('sync_binlog = 1'),
    });
    expect(only(diagnosis, 'mysql.async-replica').observed).toBe(
      `SHOW SLAVE HOSTS: 1 replica(s) (server_id 2 at 127.0.0.1:${replica.port}); rpl_semi_sync_master_enabled = OFF`,
    );
    expect(diagnosis.checked).toEqual([
      '@@innodb_flush_log_at_trx_commit',
      '@@innodb_flush_method',
      '@@innodb_doublewrite',
      '@@log_bin',
      '@@sync_binlog',
      '@@read_only',
      '@@rpl_semi_sync_master_enabled',
      'SHOW GLOBAL STATUS Rpl_semi_sync_master_status',
      'SHOW GLOBAL STATUS Rpl_semi_sync_master_clients',
      'SHOW ALL SLAVES STATUS',
      'SHOW SLAVE HOSTS',
    ]);
  });

  it('reports nothing for a durable primary with a semi-synchronous replica, and writes nothing', async () => {
    await clean();
    const store = new MysqlStore(pool(primary), { table: 'doctor_untouched' });
    try {
      expect((await diagnoseStore(store)).findings).toEqual([]);
    } finally {
      await store.close();
    }
    const [tables] = await onPrimary.query(`SHOW TABLES LIKE 'doctor_untouched%'`);
    expect(tables).toEqual([]);
    // A store opened from a URL (which sets its table up first) reports the same.
    const opened = await openStore(primary.url());
    try {
      expect((await diagnoseStore(opened)).findings).toEqual([]);
    } finally {
      await opened.close();
    }
  });

  it('reports innodb_flush_log_at_trx_commit 0 and 2 as unsafe, not 3', async () => {
    await clean();
    try {
      for (const value of [0, 2]) {
        await onPrimary.query(`SET GLOBAL innodb_flush_log_at_trx_commit = ${value}`);
        const diagnosis = await diagnose(primary);
        expect(levels(diagnosis)).toEqual([['mysql.flush-log-at-trx-commit', 'unsafe']]);
        expect(diagnosis.findings[0]!.observed).toBe(`innodb_flush_log_at_trx_commit = ${value}`);
        expect(diagnosis.findings[0]!.risk).toContain(
          value === 0 ? 'a crash of mysqld' : 'a crash of mysqld alone does not',
        );
      }
      await onPrimary.query('SET GLOBAL innodb_flush_log_at_trx_commit = 3');
      expect((await diagnose(primary)).findings).toEqual([]);
    } finally {
      await onPrimary.query('SET GLOBAL innodb_flush_log_at_trx_commit = 1');
    }
  });

  it('reports a read-only primary as a warning', async () => {
    await clean();
    await onPrimary.query('SET GLOBAL read_only = ON');
    try {
      const diagnosis = await diagnose(primary);
      expect(levels(diagnosis)).toEqual([['mysql.read-only', 'warning']]);
      expect(diagnosis.findings[0]!.observed).toBe('read_only = ON');
    } finally {
      await onPrimary.query('SET GLOBAL read_only = OFF');
    }
  });

  it('reports semi-synchronous replication that a replica does not acknowledge, or that fell back', async () => {
    await clean();
    try {
      await semiSyncReplica(false);
      const unacknowledged = await diagnose(primary);
      expect(levels(unacknowledged)).toEqual([['mysql.async-replica', 'unsafe']]);
      expect(unacknowledged.findings[0]!.observed).toMatch(
        /; Rpl_semi_sync_master_clients = 0 of 1 replicas$/,
      );

      // A commit that waits out the timeout switches the primary to asynchronous replication.
      await onPrimary.query(
        'SET GLOBAL rpl_semi_sync_master_timeout = 100; CREATE TABLE IF NOT EXISTS doctor_write (a INT); INSERT INTO doctor_write VALUES (1)',
      );
      expect((await semiSync()).Rpl_semi_sync_master_status).toBe('OFF');
      const fellBack = await diagnose(primary);
      expect(levels(fellBack)).toEqual([['mysql.async-replica', 'unsafe']]);
      expect(fellBack.findings[0]!.observed).toMatch(
        /; rpl_semi_sync_master_enabled = ON but Rpl_semi_sync_master_status = OFF \(fell back to asynchronous\)$/,
      );
    } finally {
      await clean();
    }
  });

  it('reports replication statements this user may not run as unknown, not as a failure', async () => {
    await clean();
    await onPrimary.query(
      `CREATE USER IF NOT EXISTS 'app'@'127.0.0.1'; GRANT ALL ON ${MARIADB_DATABASE}.* TO 'app'@'127.0.0.1'`,
    );
    const asApp = { user: 'app' };
    const diagnosis = await diagnose(primary, asApp);
    expect(levels(diagnosis)).toEqual([['mysql.replication-unreadable', 'unknown']]);
    expect(diagnosis.findings[0]!.observed).toMatch(
      /^SHOW ALL SLAVES STATUS: Access denied; .*SLAVE MONITOR.*; SHOW SLAVE HOSTS: Access denied; .*REPLICATION MASTER ADMIN/,
    );
    // On the replica (the user came over with replication): its own settings, and no knowing
    // whether it is a replica.
    await waitFor('the user on the replica', async () => {
      const [users] = await onReplica.query(`SELECT 1 FROM mysql.user WHERE User = 'app'`);
      return (users as unknown[]).length === 1;
    });
    expect(levels(await diagnose(replica, asApp))).toEqual([
      ['mysql.doublewrite-off', 'unsafe'],
      ['mysql.flush-log-at-trx-commit', 'unsafe'],
      ['mysql.flush-method-nosync', 'unsafe'],
      ['mysql.replication-unreadable', 'unknown'],
    ]);
    // Its waits add up under load: the replica registering again (up to 15 s), a commit waiting
    // for its acknowledgement (up to 10 s), the user replicated (up to 15 s).
  }, 60_000);

  it('fails with STORE_UNAVAILABLE within the query deadline on a paused server', async () => {
    const store = new MysqlStore(pool(replica), { queryTimeoutMs: 300, connectTimeoutMs: 300 });
    replica.pause();
    try {
      const error = await rejection(diagnoseStore(store), 5000);
      expect(error.code).toBe(ErrorCode.STORE_UNAVAILABLE);
      expect(error.message).toMatch(/diagnose .*failed \(LEASEHOLD_TIMEOUT\)/);
    } finally {
      replica.resume();
      await store.close();
    }
  });

  it('fails with STORE_UNAVAILABLE on a stopped server, without the password', async () => {
    const store = new MysqlStore(pool(replica, { password: 'hunter2' }));
    try {
      await replica.stop();
      const error = await rejection(diagnoseStore(store), 5000);
      expect(error.code).toBe(ErrorCode.STORE_UNAVAILABLE);
      expect(error.message).toMatch(/diagnose .*failed \(ECONNREFUSED\)/);
      expect(error.message).not.toContain('hunter2');
    } finally {
      await store.close();
    }
  });
});
