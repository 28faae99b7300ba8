import { describe, expect, it } from 'vitest';
import { LeaseError, MemoryStore, openStore, SqliteStore } from '../../src/index.js';
import { redact } from '../../src/core/open-store.js';
import { tempDir } from '../harness/processes.js';

async function code(p: Promise<unknown>): Promise<string> {
  return p.then(
    () => 'resolved',
    (e: unknown) => (e instanceof LeaseError ? `${e.code}: ${e.message}` : String(e)),
  );
}

describe('openStore', () => {
  it('opens memory: and sqlite: URLs', async () => {
    const memory = await openStore('memory:');
    expect(memory).toBeInstanceOf(MemoryStore);
    await memory.close();
    const dir = tempDir();
    const sqlite = await openStore(`sqlite:${dir.path}/x.db?table=custom&maxClockSkewMs=10`);
    expect(sqlite).toBeInstanceOf(SqliteStore);
    expect(sqlite.maxClockSkewMs).toBe(10);
    await sqlite.close();
    const inMemory = await openStore('sqlite::memory:');
    expect(await inMemory.tryAcquire('r', 'o', 1000)).toMatchObject({ token: 1 });
    await inMemory.close();
    dir.cleanup();
  });

  it('falls back to LEASEHOLD_STORE', async () => {
    const before = process.env.LEASEHOLD_STORE;
    process.env.LEASEHOLD_STORE = 'memory:';
    try {
      const store = await openStore();
      expect(store).toBeInstanceOf(MemoryStore);
      await store.close();
    } finally {
      if (before === undefined) delete process.env.LEASEHOLD_STORE;
      else process.env.LEASEHOLD_STORE = before;
    }
  });

  it('names the known schemes for an unknown one', async () => {
    const message = await code(openStore('mongodb://localhost/x'));
    expect(message).toMatch(/^STORE_URL_INVALID: unknown store scheme "mongodb:"/);
    expect(message).toContain('sqlite:');
    expect(message).toContain('postgres:');
  });

  it('rejects malformed URLs and unknown parameters', async () => {
    expect(await code(openStore(''))).toMatch(/^STORE_URL_INVALID/);
    expect(await code(openStore('no-scheme-here'))).toMatch(/^STORE_URL_INVALID/);
    expect(await code(openStore('sqlite:'))).toMatch(/^STORE_URL_INVALID.*needs a path/);
    expect(await code(openStore('sqlite::memory:?tabel=x'))).toMatch(
      /^STORE_URL_INVALID: unknown parameter "tabel"/,
    );
    expect(await code(openStore('sqlite::memory:?busyTimeoutMs=soon'))).toMatch(/whole number/);
    expect(await code(openStore('memory:extra'))).toMatch(/^STORE_URL_INVALID/);
  });

  it('redacts passwords, even with unencoded @ and / in them', () => {
    expect(redact('postgres://u:secret@host:5432/db')).toBe('postgres://u:***@host:5432/db');
    expect(redact('redis://:p@ss/w0rd@127.0.0.1:6379/0?prefix=x@y')).toBe(
      'redis://:***@127.0.0.1:6379/0?prefix=x@y',
    );
    expect(redact('postgres://user@host/db')).toBe('postgres://user@host/db');
    expect(redact('sqlite:./a@b.db')).toBe('sqlite:./a@b.db');
    expect(redact('dynamodb://t?endpoint=http://key:sec@127.0.0.1:8000&region=x')).toBe(
      'dynamodb://t?endpoint=http://key:***@127.0.0.1:8000&region=x',
    );
    expect(redact('dynamodb://t?endpoint=http%3A%2F%2Fkey%3Asec%40h')).toBe(
      'dynamodb://t?endpoint=http%3A%2F%2Fkey%3A***%40h',
    );
  });
});
