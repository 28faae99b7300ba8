import {
  finding,
  findingIds,
  FindingLevel,
  type Diagnosis,
  type Finding,
} from '../../core/doctor.js';
import { isInsufficientPrivilege } from './postgres-errors.js';

findingIds(
  'postgres.fsync-off',
  'postgres.full-page-writes-off',
  'postgres.synchronous-commit-off',
  'postgres.synchronous-commit-local',
  'postgres.synchronous-commit-remote-write',
  'postgres.standby',
  'postgres.async-standby',
  'postgres.quorum-standby',
  'postgres.replication-unreadable',
);

/** Runs one read-only statement (no parameters) and returns its rows. */
export type PgRead = (text: string) => Promise<Record<string, unknown>[]>;

/**
 * The settings as this store's sessions see them (`current_setting` is `SHOW`), in one round trip:
 * a role or database can set `synchronous_commit` for the store's connections alone.
 */
const SETTINGS = `SELECT current_setting('fsync') AS fsync,
  current_setting('full_page_writes') AS full_page_writes,
  current_setting('synchronous_commit') AS synchronous_commit,
  current_setting('synchronous_standby_names') AS synchronous_standby_names,
  pg_is_in_recovery() AS in_recovery,
  current_user AS role`;

/** The standbys streaming from this server; their state is hidden without `pg_read_all_stats`. */
const STANDBYS = `SELECT application_name, host(client_addr) AS client_addr, sync_state
  FROM pg_stat_replication ORDER BY application_name, pid`;

const CHECKED = Object.freeze([
  'SHOW fsync',
  'SHOW full_page_writes',
  'SHOW synchronous_commit',
  'SHOW synchronous_standby_names',
  'pg_is_in_recovery()',
  'pg_stat_replication',
]);

interface Standby {
  readonly name: string;
  readonly address: string | null;
  /** `async`, `potential`, `sync` or `quorum`; `null` when hidden from this role. */
  readonly syncState: string | null;
}

/** What `pg_stat_replication` said: the standbys, or why it could not be read. */
type Standbys = { readonly rows: readonly Standby[] } | { readonly denied: string };

/**
 * Reads what decides whether a PostgreSQL server keeps acknowledged grants through a crash, a
 * power loss or a failover, through `read` (two statements, nothing written), and says what in it
 * can lose them. A view this role may not read becomes an `unknown` finding; any other failure
 * rejects.
 */
export async function diagnosePostgres(read: PgRead): Promise<Diagnosis> {
  const [settings] = await read(SETTINGS);
  if (!settings) throw new Error('the settings query returned no row');
  const fsync = String(settings.fsync);
  const fullPageWrites = String(settings.full_page_writes);
  const commit = String(settings.synchronous_commit);
  const names = String(settings.synchronous_standby_names).trim();
  const role = String(settings.role);
  const standbys = await readStandbys(read);
  const findings: Finding[] = [];

  if (fsync === 'off')
    findings.push(
      finding(
        'postgres.fsync-off',
        FindingLevel.UNSAFE,
        'fsync = off',
        'an OS crash or power loss can lose acknowledged grants or corrupt the database: a second holder can be granted while the first still works, and tokens handed out again',
        'fsync = on (ALTER SYSTEM SET fsync = on; SELECT pg_reload_conf())',
      ),
    );
  if (fullPageWrites === 'off')
    findings.push(
      finding(
        'postgres.full-page-writes-off',
        FindingLevel.UNSAFE,
        'full_page_writes = off',
        'a power loss or OS crash in the middle of a page write leaves a torn page that WAL replay cannot repair: the lease table can come back corrupt or without acknowledged grants',
        'full_page_writes = on (ALTER SYSTEM SET full_page_writes = on; SELECT pg_reload_conf())',
      ),
    );
  findings.push(...commitFindings(commit, names));
  if (settings.in_recovery === true)
    findings.push(
      finding(
        'postgres.standby',
        FindingLevel.WARNING,
        'pg_is_in_recovery() = true (a standby)',
        'the server refuses writes: every acquire, renew and release fails with STORE_UNAVAILABLE until it is promoted, and the leases it lists lag the primary',
        'point leasehold at the primary (an address that always leads to the current primary)',
      ),
    );
  findings.push(...standbyFindings(standbys, names, role));
  return { findings, checked: CHECKED };
}

/** The standbys, or the refusal when this role may not read the view at all. */
async function readStandbys(read: PgRead): Promise<Standbys> {
  try {
    const rows = await read(STANDBYS);
    return {
      rows: rows.map((row) => ({
        name: String(row.application_name),
        address: row.client_addr === null ? null : String(row.client_addr),
        syncState: row.sync_state === null ? null : String(row.sync_state),
      })),
    };
  } catch (error) {
    if (isInsufficientPrivilege(error))
      return { denied: String((error as { message?: unknown }).message) };
    throw error;
  }
}

/** What `synchronous_commit` lets a crash or a failover take. */
function commitFindings(commit: string, names: string): Finding[] {
  if (commit === 'off')
    return [
      finding(
        'postgres.synchronous-commit-off',
        FindingLevel.UNSAFE,
        "synchronous_commit = off (as this store's sessions see it)",
        'commits are acknowledged before their WAL reaches the disk: a server crash alone loses the last acknowledged grants (up to three times wal_writer_delay of them), so a second holder can be granted and tokens handed out again',
        'synchronous_commit = on for the server, or for the database or role the store connects as (ALTER ROLE … SET synchronous_commit = on)',
      ),
    ];
  if (names === '') return []; // local and remote_write then mean on
  if (commit === 'local')
    return [
      finding(
        'postgres.synchronous-commit-local',
        FindingLevel.UNSAFE,
        `synchronous_commit = local, synchronous_standby_names = ${quoted(names)}`,
        'commits do not wait for the synchronous standbys: a failover to one loses the grants acknowledged since it last caught up, so a second holder can be granted and tokens handed out again',
        'synchronous_commit = on (or remote_apply) for the database or role the store connects as',
      ),
    ];
  if (commit === 'remote_write')
    return [
      finding(
        'postgres.synchronous-commit-remote-write',
        FindingLevel.WARNING,
        `synchronous_commit = remote_write, synchronous_standby_names = ${quoted(names)}`,
        "commits wait until a synchronous standby has handed them to its OS, not until it has flushed them: a failover loses acknowledged grants only if that standby's OS crashed or lost power too",
        'synchronous_commit = on (the standby flushes before the commit is acknowledged) or remote_apply',
      ),
    ];
  return [];
}

/** What a failover to one of the streaming standbys can lose. */
function standbyFindings(standbys: Standbys, names: string, role: string): Finding[] {
  const unreadable = (observed: string): Finding =>
    finding(
      'postgres.replication-unreadable',
      FindingLevel.UNKNOWN,
      observed,
      'whether a failover can lose acknowledged grants depends on whether every standby is synchronous, which this role cannot see',
      `GRANT pg_read_all_stats TO ${role}, or check as a superuser: SELECT application_name, sync_state FROM pg_stat_replication (each standby sync, or quorum with ANY n of n)`,
    );
  if ('denied' in standbys) return [unreadable(`pg_stat_replication: ${standbys.denied}`)];
  const { rows } = standbys;
  if (rows.length === 0) return [];
  // With no synchronous standbys named, every standby is asynchronous, whatever the view hides.
  const asyncRows =
    names === ''
      ? rows
      : rows.filter((row) => row.syncState === 'async' || row.syncState === 'potential');
  const hidden = names === '' ? [] : rows.filter((row) => row.syncState === null);
  const quorum = rows.filter((row) => row.syncState === 'quorum');
  const findings: Finding[] = [];
  if (asyncRows.length > 0)
    findings.push(
      finding(
        'postgres.async-standby',
        FindingLevel.UNSAFE,
        `pg_stat_replication: ${asyncRows.map(describeStandby).join(', ')}; synchronous_standby_names = ${quoted(names)}`,
        'commits do not wait for these standbys: promoting one after a failover loses the grants acknowledged since it last caught up, so a second holder can be granted and tokens handed out again',
        'name every standby that may be promoted in synchronous_standby_names, with synchronous_commit = on or remote_apply; or never promote an asynchronous standby automatically',
      ),
    );
  const needed = quorumSize(names);
  if (quorum.length > needed)
    findings.push(
      finding(
        'postgres.quorum-standby',
        FindingLevel.UNSAFE,
        `synchronous_standby_names = ${quoted(names)}: each commit waits for ${needed} of ${quorum.length} quorum standbys (${quorum.map((row) => row.name).join(', ')})`,
        `an acknowledged grant is on only ${needed} of these standbys: promoting one that was not among them loses it, so a second holder can be granted and tokens handed out again`,
        `promote only the most advanced standby (highest pg_last_wal_receive_lsn()), or make every commit wait for all of them: ANY ${quorum.length} (…)`,
      ),
    );
  if (hidden.length > 0)
    findings.push(
      unreadable(
        `pg_stat_replication lists ${hidden.length} standby(s) (${hidden.map((row) => row.name).join(', ')}) but hides their sync_state from role ${role}`,
      ),
    );
  return findings;
}

/** `n` of `ANY n (…)`: how many quorum standbys each commit waits for. */
function quorumSize(names: string): number {
  const match = /^ANY\s+(\d+)\s*\(/i.exec(names);
  return match ? Number(match[1]) : 1;
}

function describeStandby(standby: Standby): string {
  const at = standby.address === null ? '' : ` (${standby.address})`;
  return `${standby.name}${at} sync_state = ${standby.syncState ?? 'hidden'}`;
}

/** A setting's text value as it would be written in SQL. */
function quoted(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}
