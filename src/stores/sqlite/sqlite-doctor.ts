import { statfs } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import {
  finding,
  findingIds,
  FindingLevel,
  type Finding,
  type Diagnosis,
} from '../../core/doctor.js';
import type { SqliteDatabase } from './sqlite-driver.js';

findingIds(
  'sqlite.in-memory',
  'sqlite.synchronous',
  'sqlite.journal-mode',
  'sqlite.network-file-system',
  'sqlite.tmpfs',
  'sqlite.file-system-unknown',
);

/**
 * File systems whose locks SQLite cannot rely on (its FAQ and "How To Corrupt An SQLite Database
 * File"), by the `f_type` magic of statfs(2): two processes may both believe they hold the write
 * lock, and WAL's shared memory index works on one host only.
 */
export const NETWORK_FILE_SYSTEMS: ReadonlyMap<number, string> = new Map([
  [0x6969, 'NFS'],
  [0x517b, 'SMB'],
  [0xff534d42, 'CIFS'],
  [0xfe534d42, 'SMB2'],
  [0x65735546, 'FUSE'],
  [0x01021997, '9p'],
  [0x00c36400, 'CephFS'],
  [0x5346414f, 'AFS'],
  [0x01161970, 'GFS2'],
  [0x7461636f, 'OCFS2'],
  [0x0bd00bd0, 'Lustre'],
  [0x47504653, 'GPFS'],
]);

const TMPFS = 0x01021994;
const RAMFS = 0x858458f6;

const SYNCHRONOUS = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];

/** What the SQLite file's own settings and its folder's file system say about what can be lost. */
export async function diagnoseSqlite(db: SqliteDatabase): Promise<Diagnosis> {
  const findings: Finding[] = [];
  const checked = ['PRAGMA synchronous', 'PRAGMA journal_mode'];
  const name = db.name;
  if (db.memory === true || name === undefined || name === '' || name === ':memory:') {
    findings.push(
      finding(
        'sqlite.in-memory',
        FindingLevel.UNSAFE,
        `an in-memory database (${JSON.stringify(name ?? ':memory:')})`,
        'no other process sees these leases, and closing the store forgets them: tokens start again at 1',
        'open a file (sqlite:./leasehold.db) that every process of the host shares',
      ),
    );
    return { findings, checked: ['the database name'] };
  }
  const level = Number(db.pragma('synchronous', { simple: true }));
  const journal = String(db.pragma('journal_mode', { simple: true })).toLowerCase();
  if (level < 2) {
    findings.push(
      finding(
        'sqlite.synchronous',
        FindingLevel.UNSAFE,
        `synchronous = ${SYNCHRONOUS[level] ?? level} (journal_mode = ${journal})`,
        level === 0
          ? 'an OS crash or power loss can lose acknowledged grants or corrupt the file: a token can be handed out again'
          : 'a power loss or OS crash can roll back the last acknowledged grants: their tokens are handed out again after the reboot, to holders a downstream fence cannot tell apart',
        "synchronous: 'full' (the store's default; the URL parameter synchronous=full)",
      ),
    );
  }
  if (journal !== 'wal') {
    findings.push(
      finding(
        'sqlite.journal-mode',
        FindingLevel.WARNING,
        `journal_mode = ${journal}`,
        'the store sets WAL on open; another program changed it, and readers now block writers (renewals wait on busy locks)',
        'PRAGMA journal_mode = WAL (the store sets it when it opens the file)',
      ),
    );
  }
  const folder = dirname(resolve(name));
  checked.push(`statfs ${folder}`);
  let type: number | undefined;
  try {
    type = Number((await statfs(folder)).type);
  } catch (error) {
    findings.push(
      finding(
        'sqlite.file-system-unknown',
        FindingLevel.UNKNOWN,
        `statfs of ${folder} failed: ${(error as Error).message}`,
        'SQLite locking is unreliable on network file systems (NFS, SMB, many FUSE mounts): two processes may both write',
        'check that the folder is on a local disk',
      ),
    );
  }
  if (type !== undefined) findings.push(...fileSystemFindings(type, folder));
  return { findings, checked };
}

/** The findings for a database folder on the file system of `f_type` magic `type`. */
export function fileSystemFindings(type: number, folder: string): Finding[] {
  const network = NETWORK_FILE_SYSTEMS.get(type);
  if (network !== undefined)
    return [
      finding(
        'sqlite.network-file-system',
        FindingLevel.UNSAFE,
        `${folder} is on ${network} (statfs type 0x${type.toString(16)})`,
        'file locks on a network file system are unreliable and WAL needs shared memory on one host: two processes can both grant the same lease',
        'keep the database on a local disk of the one host whose processes share it; across hosts use a server store (postgres://, redis://, etcd://, …)',
      ),
    ];
  if (type === TMPFS || type === RAMFS)
    return [
      finding(
        'sqlite.tmpfs',
        FindingLevel.WARNING,
        `${folder} is on ${type === TMPFS ? 'tmpfs' : 'ramfs'} (memory)`,
        'a reboot forgets every record and tokens start again at 1: a downstream fence that remembers a higher token refuses the new holders until it is reset',
        'keep the database on a disk-backed file system',
      ),
    ];
  return [];
}
