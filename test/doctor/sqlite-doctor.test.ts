import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { diagnoseStore, SqliteStore, type Finding, type SqliteDatabase } from '../../src/index.js';
import { fileSystemFindings, NETWORK_FILE_SYSTEMS } from '../../src/stores/sqlite/sqlite-doctor.js';
import { tempDir } from '../harness/processes.js';

const dir = tempDir('leasehold-sqlite-doctor-');
// /dev/shm is tmpfs on Linux: a real folder of the kind the tmpfs finding is about.
const shm = mkdtempSync('/dev/shm/leasehold-doctor-');
const opened: SqliteStore[] = [];
afterAll(async () => {
  for (const store of opened) await store.close().catch(() => undefined);
  dir.cleanup();
  rmSync(shm, { recursive: true, force: true });
});

async function open(
  path: string,
  options?: { synchronous?: 'full' | 'normal' },
): Promise<SqliteStore> {
  const store = await SqliteStore.open(path, options);
  opened.push(store);
  return store;
}
const ids = (findings: readonly Finding[]): string[][] => findings.map((f) => [f.id, f.level]);

describe('sqlite doctor', () => {
  it('finds nothing in a file on a local disk with the default settings', async () => {
    const { findings, checked } = await diagnoseStore(await open(join(dir.path, 'clean.db')));
    expect(findings).toEqual([]);
    expect(checked).toContain('PRAGMA synchronous');
    expect(checked.some((c) => c.startsWith('statfs '))).toBe(true);
  });

  it("reports synchronous 'normal' as unsafe on power loss", async () => {
    const store = await open(join(dir.path, 'normal.db'), { synchronous: 'normal' });
    const { findings } = await diagnoseStore(store);
    expect(ids(findings)).toEqual([['sqlite.synchronous', 'unsafe']]);
    expect(findings[0]!.observed).toBe('synchronous = NORMAL (journal_mode = wal)');
    expect(findings[0]!.fix).toContain("synchronous: 'full'");
  });

  it('reports synchronous OFF and a journal mode other than WAL, set by another program', async () => {
    const db = new Database(join(dir.path, 'off.db'));
    const store = new SqliteStore(db as unknown as SqliteDatabase);
    opened.push(store);
    db.pragma('synchronous = OFF');
    db.pragma('journal_mode = DELETE');
    const { findings } = await diagnoseStore(store);
    expect(ids(findings)).toEqual([
      ['sqlite.synchronous', 'unsafe'],
      ['sqlite.journal-mode', 'warning'],
    ]);
    expect(findings[0]!.risk).toMatch(/corrupt/);
    expect(findings[1]!.observed).toBe('journal_mode = delete');
  });

  it('reports a database on tmpfs', async () => {
    const { findings } = await diagnoseStore(await open(join(shm, 'shm.db')));
    expect(ids(findings)).toEqual([['sqlite.tmpfs', 'warning']]);
    expect(findings[0]!.observed).toBe(`${shm} is on tmpfs (memory)`);
  });

  it('reports an in-memory database as usable by one process only', async () => {
    const { findings } = await diagnoseStore(await open(':memory:'));
    expect(ids(findings)).toEqual([['sqlite.in-memory', 'unsafe']]);
  });

  it('names network file systems by their statfs type', () => {
    const [nfs] = fileSystemFindings(0x6969, '/mnt/nfs');
    expect(nfs?.id).toBe('sqlite.network-file-system');
    expect(nfs?.level).toBe('unsafe');
    expect(nfs?.observed).toBe('/mnt/nfs is on NFS (statfs type 0x6969)');
    expect(fileSystemFindings(0x65735546, '/mnt/fuse')[0]?.observed).toContain('FUSE');
    expect(NETWORK_FILE_SYSTEMS.size).toBeGreaterThan(5);
    expect(fileSystemFindings(0xef53, '/var/lib')).toEqual([]); // ext4
  });

  it('reports what it could not read as unknown, not as a failure, when the folder is gone', async () => {
    const sub = join(dir.path, 'gone');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(sub);
    const db = new Database(join(sub, 'gone.db'));
    const store = new SqliteStore(db as unknown as SqliteDatabase);
    opened.push(store);
    rmSync(sub, { recursive: true, force: true });
    const { findings } = await diagnoseStore(store);
    expect(ids(findings)).toContainEqual(['sqlite.file-system-unknown', 'unknown']);
  });
});
