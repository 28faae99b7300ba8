import { existsSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LeaseError, MemoryStore, openStore, SqliteStore } from '../../src/index.js';
import { parseStoreUrl, redact, takeParams } from '../../src/core/store-url.js';
import { tempDir } from '../harness/processes.js';
import { ManualClock } from '../../src/testing/index.js';

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

  it("gives the stores that judge expiry on the caller's clock the clock passed in, and names a mistyped option", async () => {
    const clock = new ManualClock();
    const dir = tempDir();
    for (const url of ['memory:', `sqlite:${dir.path}/clock.db?maxClockSkewMs=0`]) {
      const store = await openStore(url, { clock });
      const lease = await store.tryAcquire('r', 'a', 1000);
      expect(lease?.expiresAt, url).toBe(clock.now() + 1000);
      expect(await store.tryAcquire('r', 'b', 1000), url).toBeNull();
      await clock.advance(1001);
      expect(await store.tryAcquire('r', 'b', 1000), url).toMatchObject({ owner: 'b', token: 2 });
      await store.close();
    }
    dir.cleanup();
    expect(await code(openStore('memory:', { clok: clock } as never))).toMatch(
      /^INVALID_ARGUMENT: .*clok.*clock/,
    );
    expect(await code(openStore('memory:', { clock: 5 } as never))).toMatch(
      /^INVALID_ARGUMENT: clock/,
    );
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

  it('redacts parameters named like a secret', () => {
    expect(redact('postgres://u@h/db?password=pw1&table=t')).toBe(
      'postgres://u@h/db?password=***&table=t',
    );
    expect(redact('mysql://h/db?table=t&sslPassword=pw1#x')).toBe(
      'mysql://h/db?table=t&sslPassword=***#x',
    );
    expect(redact('redis://h?client_secret=pw1')).toBe('redis://h?client_secret=***');
    expect(redact('sqlite:./a.db?table=t')).toBe('sqlite:./a.db?table=t');
  });
});

describe('store URL parameters', () => {
  const params = (text: string): Record<string, string> =>
    takeParams(parseStoreUrl(text), ['table', 'poolSize']);

  it('reads the accepted ones', () => {
    expect(params('x:y?table=t&poolSize=2')).toEqual({ table: 't', poolSize: '2' });
    expect(params('x:y')).toEqual({});
  });

  it('refuses a repeated one, naming it, without showing a password', () => {
    const error = catchError(() => params('x://u:pw1@h?table=a&poolSize=1&table=b'));
    expect(error.code).toBe('STORE_URL_INVALID');
    expect(error.message).toBe(
      'parameter "table" is given 2 times in x://u:***@h?table=a&poolSize=1&table=b; give it once',
    );
  });

  it('refuses an unknown one, naming it and those accepted', () => {
    const error = catchError(() => params('x://u:pw1@h?password=pw1'));
    expect(error.code).toBe('STORE_URL_INVALID');
    expect(error.message).toBe(
      'unknown parameter "password" in x://u:***@h?password=***; x: accepts table, poolSize',
    );
  });
});

/** What `fn` throws, which must be a LeaseError. */
function catchError(fn: () => unknown): LeaseError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(LeaseError);
    return error as LeaseError;
  }
  throw new Error('did not throw');
}

describe('openStore without a URL or LEASEHOLD_STORE', () => {
  const saved = {
    store: process.env.LEASEHOLD_STORE,
    require: process.env.LEASEHOLD_REQUIRE_STORE,
  };
  const cwd = process.cwd();
  let dir: ReturnType<typeof tempDir>;
  const warnings: Error[] = [];
  const onWarning = (warning: Error): void => {
    if ((warning as { code?: string }).code === 'LEASEHOLD_DEFAULT_STORE') warnings.push(warning);
  };
  /** Warnings are emitted on the next tick. */
  const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

  beforeEach(() => {
    dir = tempDir();
    process.chdir(dir.path);
    delete process.env.LEASEHOLD_STORE;
    delete process.env.LEASEHOLD_REQUIRE_STORE;
    warnings.length = 0;
    process.on('warning', onWarning);
  });
  afterEach(() => {
    process.off('warning', onWarning);
    process.chdir(cwd);
    dir.cleanup();
    for (const [key, value] of [
      ['LEASEHOLD_STORE', saved.store],
      ['LEASEHOLD_REQUIRE_STORE', saved.require],
    ] as const) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  });

  // First in this describe: the warning comes once per process, so later tests would not see it.
  it('uses ./leasehold.db and warns once per process, naming the file and that it excludes only this host', async () => {
    const first = await openStore();
    expect(first).toBeInstanceOf(SqliteStore);
    await first.close();
    const second = await openStore(undefined, { requireExplicit: false });
    await second.close();
    await settled();
    const file = join(realpathSync(dir.path), 'leasehold.db');
    expect(existsSync(file)).toBe(true);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.name).toBe('LeaseholdWarning');
    expect(warnings[0]!.message).toContain(`the SQLite file ${file}`);
    expect(warnings[0]!.message).toContain('excludes only processes on this host');
    expect(warnings[0]!.message).toContain('LEASEHOLD_REQUIRE_STORE=1');
  });

  it('does not warn for a URL or LEASEHOLD_STORE', async () => {
    await (await openStore('memory:')).close();
    process.env.LEASEHOLD_STORE = 'memory:';
    await (await openStore()).close();
    await settled();
    expect(warnings).toEqual([]);
  });

  it('fails with LEASEHOLD_REQUIRE_STORE=1, naming the variables, and creates no file', async () => {
    process.env.LEASEHOLD_REQUIRE_STORE = '1';
    const message = await code(openStore());
    expect(message).toMatch(
      /^STORE_URL_INVALID: no store URL given and LEASEHOLD_STORE is not set/,
    );
    expect(message).toContain('LEASEHOLD_REQUIRE_STORE');
    expect(existsSync(join(dir.path, 'leasehold.db'))).toBe(false);
    // Anything but '', 0 or false asks for it; with a store named, it opens as usual.
    process.env.LEASEHOLD_REQUIRE_STORE = 'yes';
    expect(await code(openStore())).toMatch(/^STORE_URL_INVALID/);
    await (await openStore('memory:')).close();
    process.env.LEASEHOLD_STORE = 'memory:';
    await (await openStore()).close();
  });

  it('falls back as usual with LEASEHOLD_REQUIRE_STORE empty, 0 or false', async () => {
    for (const value of ['', '0', 'false', 'FALSE']) {
      process.env.LEASEHOLD_REQUIRE_STORE = value;
      await (await openStore()).close();
    }
    expect(existsSync(join(dir.path, 'leasehold.db'))).toBe(true);
  });

  it('fails with requireExplicit, naming the option, and creates no file', async () => {
    const message = await code(openStore(undefined, { requireExplicit: true }));
    expect(message).toMatch(
      /^STORE_URL_INVALID: no store URL given and LEASEHOLD_STORE is not set/,
    );
    expect(message).toContain('requireExplicit');
    expect(existsSync(join(dir.path, 'leasehold.db'))).toBe(false);
    await (await openStore('memory:', { requireExplicit: true })).close();
  });
});
