import {
  finding,
  findingIds,
  FindingLevel,
  type Diagnosis,
  type Finding,
} from '../../core/doctor.js';
import { isAccessDenied, isParseError } from './mysql-errors.js';

findingIds(
  'mysql.flush-log-at-trx-commit',
  'mysql.sync-binlog',
  'mysql.flush-method-nosync',
  'mysql.doublewrite-off',
  'mysql.read-only',
  'mysql.replica',
  'mysql.writable-replica',
  'mysql.async-replica',
  'mysql.replication-unreadable',
);

/** Runs one read-only statement and returns its rows (column name → value). */
export type MysqlRead = (sql: string) => Promise<Record<string, unknown>[]>;

/** The global variables read, where the server has them (MySQL 8.0.26+ names semi-sync `source`). */
const VARIABLES = [
  'version',
  'innodb_flush_log_at_trx_commit',
  'innodb_flush_method',
  'innodb_doublewrite',
  'log_bin',
  'sync_binlog',
  'read_only',
  'super_read_only',
  'rpl_semi_sync_master_enabled',
  'rpl_semi_sync_source_enabled',
];
const STATUS = [
  'Rpl_semi_sync_master_status',
  'Rpl_semi_sync_master_clients',
  'Rpl_semi_sync_source_status',
  'Rpl_semi_sync_source_clients',
];

/** What a replication statement answered: its rows, or the refusal when this user may not run it. */
interface Answer {
  readonly statement: string;
  readonly rows?: readonly Record<string, unknown>[];
  readonly denied?: string;
}

/**
 * Reads what decides whether a MySQL or MariaDB server keeps acknowledged grants through a crash,
 * a power loss or a failover, through `read` (four statements, nothing written), and says what in
 * it can lose them. A replication statement this user may not run becomes an `unknown` finding;
 * any other failure rejects.
 */
export async function diagnoseMysql(read: MysqlRead): Promise<Diagnosis> {
  const vars = nameValues(
    await read(`SHOW GLOBAL VARIABLES WHERE Variable_name IN (${list(VARIABLES)})`),
  );
  const status = nameValues(
    await read(`SHOW GLOBAL STATUS WHERE Variable_name IN (${list(STATUS)})`),
  );
  const mariadb = /mariadb/i.test(vars.version ?? '');
  const source = mariadb
    ? await tryRead(read, ['SHOW ALL SLAVES STATUS'])
    : await tryRead(read, ['SHOW REPLICA STATUS', 'SHOW SLAVE STATUS']);
  const replicas = mariadb
    ? await tryRead(read, ['SHOW SLAVE HOSTS'])
    : await tryRead(read, ['SHOW REPLICAS', 'SHOW SLAVE HOSTS']);

  const findings: Finding[] = [...durabilityFindings(vars)];
  const isReplica = (source.rows?.length ?? 0) > 0;
  if (isReplica) findings.push(replicaFinding(source, vars));
  else if (on(vars.read_only) || on(vars.super_read_only))
    findings.push(
      finding(
        'mysql.read-only',
        FindingLevel.WARNING,
        settings(vars, ['read_only', 'super_read_only']),
        'writes are refused for users without SUPER (READ ONLY ADMIN on MariaDB): every acquire, renew and release fails with STORE_UNAVAILABLE, while a user with it still writes',
        'read_only = OFF on the primary, or point leasehold at the primary',
      ),
    );
  const unreplicated = asyncReplicas(replicas, vars, status);
  if (unreplicated) findings.push(unreplicated);
  const denied = [source, replicas].filter((answer) => answer.denied !== undefined);
  if (denied.length > 0)
    findings.push(
      finding(
        'mysql.replication-unreadable',
        FindingLevel.UNKNOWN,
        denied.map((answer) => `${answer.statement}: ${answer.denied}`).join('; '),
        'whether this server is a replica, or has replicas that a failover could promote without the last acknowledged grants, is hidden from this user',
        `run ${denied.map((answer) => answer.statement).join(' and ')} as an administrator, or grant this user the privilege the message names (MariaDB: SLAVE MONITOR, REPLICATION MASTER ADMIN; MySQL: REPLICATION CLIENT, REPLICATION SLAVE)`,
      ),
    );
  return {
    findings,
    checked: [
      ...VARIABLES.filter((name) => name !== 'version' && name in vars).map((name) => `@@${name}`),
      ...STATUS.filter((name) => name in status).map((name) => `SHOW GLOBAL STATUS ${name}`),
      source.statement,
      replicas.statement,
    ],
  };
}

/** What InnoDB and the binary log keep through a crash or a power loss. */
function durabilityFindings(vars: Record<string, string>): Finding[] {
  const findings: Finding[] = [];
  const flush = vars.innodb_flush_log_at_trx_commit;
  // 3 (MariaDB) flushes at prepare and at commit: as durable as 1.
  if (flush !== undefined && flush !== '1' && flush !== '3')
    findings.push(
      finding(
        'mysql.flush-log-at-trx-commit',
        FindingLevel.UNSAFE,
        `innodb_flush_log_at_trx_commit = ${flush}`,
        `${flushRisk(flush)}, so a second holder can be granted while the first still works, and tokens handed out again`,
        'innodb_flush_log_at_trx_commit = 1 (SET GLOBAL innodb_flush_log_at_trx_commit = 1, and in the option file)',
      ),
    );
  if (on(vars.log_bin) && vars.sync_binlog !== undefined && vars.sync_binlog !== '1')
    findings.push(
      finding(
        'mysql.sync-binlog',
        FindingLevel.UNSAFE,
        `log_bin = ON, sync_binlog = ${vars.sync_binlog}`,
        'the binary log is not flushed at each commit: after an OS crash or power loss it can miss acknowledged grants, which replicas then never get (a failover to one loses them) and which crash recovery, trusting the binary log, can roll back here too',
        'sync_binlog = 1 (SET GLOBAL sync_binlog = 1, and in the option file)',
      ),
    );
  const method = vars.innodb_flush_method;
  if (method !== undefined && /^(nosync|littlesync)$/i.test(method))
    findings.push(
      finding(
        'mysql.flush-method-nosync',
        FindingLevel.UNSAFE,
        `innodb_flush_method = ${method}`,
        'InnoDB does not flush its files to disk (a mode meant for testing): an OS crash or power loss can lose acknowledged grants or corrupt the lease table',
        'innodb_flush_method = O_DIRECT or fsync (in the option file; takes a restart)',
      ),
    );
  const doublewrite = vars.innodb_doublewrite;
  if (doublewrite !== undefined && /^(OFF|0|DETECT_ONLY)$/i.test(doublewrite))
    findings.push(
      finding(
        'mysql.doublewrite-off',
        FindingLevel.UNSAFE,
        `innodb_doublewrite = ${doublewrite}`,
        'a power loss or OS crash in the middle of a page write leaves a torn page that crash recovery cannot repair: the lease table can come back corrupt or without acknowledged grants',
        'innodb_doublewrite = ON (in the option file; takes a restart)',
      ),
    );
  return findings;
}

function flushRisk(value: string): string {
  if (value === '2')
    return 'InnoDB hands each commit to the OS but flushes its log about once a second: an OS crash or power loss loses the last second or so of acknowledged grants (a crash of mysqld alone does not)';
  if (value === '0')
    return 'InnoDB writes and flushes its log about once a second: a crash of mysqld, of the OS, or a power loss loses the last second or so of acknowledged grants';
  return 'commits are not flushed to the InnoDB log when acknowledged: a crash can lose the last acknowledged grants';
}

/** This server replicates from another: leases belong on the primary. */
function replicaFinding(source: Answer, vars: Record<string, string>): Finding {
  const links = (source.rows ?? []).map((row) => {
    const host = String(row.Source_Host ?? row.Master_Host);
    const port = String(row.Source_Port ?? row.Master_Port);
    const io = String(row.Replica_IO_Running ?? row.Slave_IO_Running);
    const sql = String(row.Replica_SQL_Running ?? row.Slave_SQL_Running);
    const name =
      typeof row.Connection_name === 'string' && row.Connection_name !== ''
        ? `'${row.Connection_name}' `
        : '';
    return `${name}from ${host}:${port} (IO running ${io}, SQL running ${sql})`;
  });
  const observed = `${source.statement}: a replica ${links.join(', ')}; ${settings(vars, ['read_only', 'super_read_only'])}`;
  if (on(vars.read_only) || on(vars.super_read_only))
    return finding(
      'mysql.replica',
      FindingLevel.WARNING,
      observed,
      'writes are refused here for users without SUPER (READ ONLY ADMIN on MariaDB): every acquire, renew and release fails with STORE_UNAVAILABLE, and the leases it lists lag the primary',
      'point leasehold at the primary',
    );
  return finding(
    'mysql.writable-replica',
    FindingLevel.UNSAFE,
    observed,
    "this replica accepts writes, which are not the primary's: clients of the primary can be granted the same resources at the same time, and replication can overwrite the records written here",
    'point leasehold at the primary, and set read_only = ON on every replica',
  );
}

/** Replicas that a commit does not wait for: a failover to one can lose acknowledged grants. */
function asyncReplicas(
  replicas: Answer,
  vars: Record<string, string>,
  status: Record<string, string>,
): Finding | undefined {
  const rows = replicas.rows ?? [];
  if (rows.length === 0) return undefined;
  const enabledName =
    'rpl_semi_sync_source_enabled' in vars
      ? 'rpl_semi_sync_source_enabled'
      : 'rpl_semi_sync_master_enabled';
  const statusName =
    'Rpl_semi_sync_source_status' in status
      ? 'Rpl_semi_sync_source_status'
      : 'Rpl_semi_sync_master_status';
  const clientsName =
    'Rpl_semi_sync_source_clients' in status
      ? 'Rpl_semi_sync_source_clients'
      : 'Rpl_semi_sync_master_clients';
  const enabled = on(vars[enabledName]);
  const active = on(status[statusName]);
  const clients = Number(status[clientsName] ?? 0);
  if (enabled && active && clients >= rows.length) return undefined;
  const listed = rows
    .map(
      (row) =>
        `server_id ${String(row.Server_id ?? row.Server_Id)} at ${String(row.Host)}:${String(row.Port)}`,
    )
    .join(', ');
  const semiSync = !enabled
    ? `${enabledName} = ${vars[enabledName] ?? 'absent (no semi-synchronous replication)'}`
    : !active
      ? `${enabledName} = ON but ${statusName} = OFF (fell back to asynchronous)`
      : `${clientsName} = ${clients} of ${rows.length} replicas`;
  return finding(
    'mysql.async-replica',
    FindingLevel.UNSAFE,
    `${replicas.statement}: ${rows.length} replica(s) (${listed}); ${semiSync}`,
    'commits do not wait for these replicas: promoting one after a failover loses the grants acknowledged since it last caught up, so a second holder can be granted and tokens handed out again',
    'semi-synchronous replication: rpl_semi_sync_master_enabled = ON here and rpl_semi_sync_slave_enabled = ON on every replica (MySQL 8.0.26+: rpl_semi_sync_source_enabled, rpl_semi_sync_replica_enabled), with rpl_semi_sync_master_timeout long enough that it never falls back to asynchronous, and failover promoting the most advanced replica; or never promote a replica automatically',
  );
}

/** Runs the first of `statements` the server understands; a refusal for want of a privilege is an answer. */
async function tryRead(read: MysqlRead, statements: readonly string[]): Promise<Answer> {
  for (let i = 0; ; i++) {
    const statement = statements[i]!;
    try {
      return { statement, rows: await read(statement) };
    } catch (error) {
      const { message } = (error ?? {}) as { message?: unknown };
      if (isAccessDenied(error)) return { statement, denied: String(message) };
      // An older server without the newer statement: try the older one.
      if (isParseError(error) && i + 1 < statements.length) continue;
      throw error;
    }
  }
}

/** `SHOW VARIABLES` / `SHOW STATUS` rows as name → value. */
function nameValues(rows: readonly Record<string, unknown>[]): Record<string, string> {
  return Object.fromEntries(rows.map((row) => [String(row.Variable_name), String(row.Value)]));
}

function list(names: readonly string[]): string {
  return names.map((name) => `'${name}'`).join(', ');
}

function on(value: string | undefined): boolean {
  return value !== undefined && /^(ON|1)$/i.test(value);
}

/** `name = value` for each of `names` the server has. */
function settings(vars: Record<string, string>, names: readonly string[]): string {
  return names
    .filter((name) => name in vars)
    .map((name) => `${name} = ${vars[name]}`)
    .join(', ');
}
