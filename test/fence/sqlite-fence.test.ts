import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorCode, isLeaseError } from '../../src/index.js';
import { FenceGuard, SqliteFence } from '../../src/fence/index.js';
import { tempDir, waitFor } from '../harness/processes.js';

const run = promisify(execFile);
const worker = fileURLToPath(new URL('./fence-worker.mjs', import.meta.url));
const dir = tempDir('leasehold-fence-');
afterAll(() => dir.cleanup());

let n = 0;
let db: Database.Database;
let fence: SqliteFence<Database.Database>;

beforeEach(async () => {
  db = new Database(join(dir.path, `fence-${++n}.db`));
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE log (id INTEGER PRIMARY KEY, token INTEGER NOT NULL)');
  fence = new SqliteFence(db);
  await fence.init();
});
afterEach(() => db.close());

const logged = (): number[] =>
  db
    .prepare('SELECT token FROM log ORDER BY id')
    .all()
    .map((r) => (r as { token: number }).token);
const append = (token: number) => (d: Database.Database) =>
  d.prepare('INSERT INTO log (token) VALUES (?)').run(token).lastInsertRowid;

describe('SqliteFence', () => {
  it('accepts the current token, and the same token again, and rejects an older one without running fn', async () => {
    expect(await fence.highest('ledger')).toBeNull();
    expect(await fence.write('ledger', 2, append(2))).toEqual({ accepted: true, value: 1 });
    expect(await fence.write('ledger', 2, append(2))).toEqual({ accepted: true, value: 2 });
    let ran = false;
    const stale = await fence.write('ledger', 1, () => {
      ran = true;
    });
    expect(stale).toEqual({ accepted: false });
    expect(ran).toBe(false);
    expect(await fence.write('ledger', 3, append(3))).toMatchObject({ accepted: true });
    expect(await fence.highest('ledger')).toBe(3);
    expect(await fence.highest('other')).toBeNull();
    expect(await fence.write('other', 1, append(1))).toMatchObject({ accepted: true });
    expect(logged()).toEqual([2, 2, 3, 1]);
  });

  it('rolls back the token with the write when fn throws, and rethrows its error', async () => {
    await fence.write('ledger', 2, append(2));
    const boom = new Error('boom');
    await expect(
      fence.write('ledger', 5, (d) => {
        append(5)(d);
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await fence.highest('ledger')).toBe(2);
    expect(logged()).toEqual([2]);
    // Token 5 was never recorded, so a write under 3 is still current.
    expect(await fence.write('ledger', 3, append(3))).toMatchObject({ accepted: true });
  });

  it('refuses an async fn on SQLite and writes nothing', async () => {
    const result = fence.write('ledger', 4, async (d) => append(4)(d));
    await expect(result).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    await expect(result).rejects.toThrow(/fn must be synchronous/);
    expect(await fence.highest('ledger')).toBeNull();
    expect(logged()).toEqual([]);
  });

  it('refuses a plain function returning a promise, and says its later code runs unfenced', async () => {
    let after = false;
    const result = fence.write('ledger', 4, (d) =>
      Promise.resolve().then(() => {
        after = true;
        return append(4)(d);
      }),
    );
    await expect(result).rejects.toThrow(/returned a promise.*outside the fence/);
    expect(await fence.highest('ledger')).toBeNull();
    expect(after).toBe(true); // it did run, after the rollback: which is what the message warns of
  });

  it('checks its input and names the field', async () => {
    const fn = (): void => undefined;
    for (const [resource, token, field] of [
      ['', 1, 'resource'],
      ['r', 0, 'token'],
      ['r', 1.5, 'token'],
      ['r', 2 ** 53, 'token'],
      ['r', '3', 'token'],
    ] as const) {
      const error = await fence.write(resource, token as number, fn).catch((e: unknown) => e);
      expect(isLeaseError(error, ErrorCode.INVALID_ARGUMENT), String(error)).toBe(true);
      expect((error as Error).message).toMatch(new RegExp(`^${field} `));
    }
    expect(() => new SqliteFence(db, { table: 'x; DROP TABLE log' })).toThrow(/^table /);
  });

  it('says what is wrong when the table was never created', async () => {
    const bare = new SqliteFence(db, { table: 'nowhere' });
    const error = await bare.write('r', 1, () => 1).catch((e: unknown) => e);
    expect(isLeaseError(error, ErrorCode.STORE_UNAVAILABLE)).toBe(true);
    expect((error as Error).message).toMatch(/no such table.*init\(\)|init\(\).*no such table/);
  });

  it('between two processes, a writer is rejected once a higher token has written, never after', async () => {
    const main = join(import.meta.dirname, '../../dist/fence/index.js');
    if (!existsSync(main))
      throw new Error(`${main} is missing: run npx tsc -p tsconfig.build.json`);
    const path = db.name;
    // The old holder writes under token 1 until it is rejected; the new holder writes once under 2.
    const old = spawn(process.execPath, [worker, path, '1', '100000'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    old.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const exited = new Promise<void>((resolve) => old.once('exit', () => resolve()));
    await waitFor('the old holder to write', () => logged().length > 0);
    const { stdout } = await run(process.execPath, [worker, path, '2', '1']);
    expect(JSON.parse(stdout)).toEqual({ token: 2, accepted: 1, rejected: 0 });
    await exited;
    const oldResult = JSON.parse(out) as { accepted: number; rejected: number };
    expect(oldResult.rejected).toBe(1);
    const tokens = logged();
    // Every write under token 1 committed before the one under token 2, none after it.
    expect(tokens.at(-1)).toBe(2);
    expect(tokens.filter((t) => t === 2)).toHaveLength(1);
    expect(tokens.filter((t) => t === 1)).toHaveLength(oldResult.accepted);
    expect(await fence.highest('ledger')).toBe(2);
  });
});

describe('FenceGuard', () => {
  it('keeps the highest token per resource and rejects lower ones', () => {
    const guard = new FenceGuard();
    expect(guard.highest('a')).toBeNull();
    expect(guard.check('a', 2)).toBe(true);
    expect(guard.check('a', 2)).toBe(true);
    expect(guard.check('a', 1)).toBe(false);
    expect(guard.check('b', 1)).toBe(true);
    expect(guard.check('a', 7)).toBe(true);
    expect(guard.check('a', 6)).toBe(false);
    expect(guard.highest('a')).toBe(7);
    expect(() => guard.check('a', -1)).toThrow(/^token must be a positive safe integer/);
  });
});
