import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { LeaseError, SqliteStore } from '../../src/index.js';
import type { SqliteDatabase, SqliteStatement } from '../../src/stores/sqlite/sqlite-driver.js';
import { tempDir } from '../harness/processes.js';

// Group commit of single-lease transitions: calls asked for together share one IMMEDIATE
// transaction (one commit), each applied exactly as alone, in the order asked.

const dir = tempDir('leasehold-sqlite-group-');
const stores: SqliteStore[] = [];
afterAll(async () => {
  for (const store of stores) await store.close().catch(() => {});
  dir.cleanup();
});

interface Counted {
  store: SqliteStore;
  /** IMMEDIATE transactions begun through the store's connection so far. */
  transactions: () => number;
  /** Makes the acquire statement throw on its `n`th run from now (1 = the next). */
  failAcquire: (n: number) => void;
}

let files = 0;
function open(): Counted {
  const db = new Database(`${dir.path}/group-${++files}.db`);
  let transactions = 0;
  let failIn = 0;
  const counting: SqliteDatabase = {
    name: db.name,
    memory: db.memory,
    prepare(sql: string): SqliteStatement {
      const statement = db.prepare(sql);
      if (!sql.trimStart().startsWith('INSERT INTO') || !sql.includes('RETURNING token'))
        return statement;
      const failing = (): void => {
        if (failIn > 0 && --failIn === 0)
          throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_WRITE' });
      };
      return {
        run: (...p: unknown[]) => statement.run(...p),
        all: (...p: unknown[]) => {
          failing();
          return statement.all(...p);
        },
        get: (...p: unknown[]) => {
          failing();
          return statement.get(...p);
        },
      };
    },
    exec: (sql) => db.exec(sql),
    pragma: (sql, options) => db.pragma(sql, options),
    transaction: ((fn: (...args: never[]) => unknown) => {
      const tx = db.transaction(fn);
      const plain = (...args: never[]): unknown => tx(...args);
      const immediate = (...args: never[]): unknown => {
        transactions++;
        return tx.immediate(...args);
      };
      return Object.assign(plain, { immediate });
    }) as SqliteDatabase['transaction'],
    close: () => db.close(),
  };
  const store = new SqliteStore(counting);
  stores.push(store);
  return { store, transactions: () => transactions, failAcquire: (n) => (failIn = n) };
}

describe('SqliteStore group commit', () => {
  it('applies 32 acquisitions asked together in one transaction', async () => {
    const { store, transactions } = open();
    const before = transactions();
    const names = Array.from({ length: 32 }, (_, i) => `g/${i}`);
    const leases = await Promise.all(names.map((r) => store.tryAcquire(r, 'a', 10_000)));
    expect(leases.map((l) => l?.token)).toEqual(names.map(() => 1));
    expect(transactions() - before).toBe(1);
    // And their releases, asked together, in one more.
    const released = await Promise.all(leases.map((l) => store.release(l!)));
    expect(released.every(Boolean)).toBe(true);
    expect(transactions() - before).toBe(2);
  });

  it('a lone call is its one statement, in autocommit', async () => {
    const { store, transactions } = open();
    const before = transactions();
    const lease = await store.tryAcquire('lone', 'a', 10_000);
    const renewed = await store.renew(lease!, 20_000);
    expect(renewed?.token).toBe(1);
    expect(renewed!.expiresAt).toBeGreaterThan(lease!.expiresAt);
    expect(await store.release(lease!)).toBe(true);
    expect(await store.tryAcquire('lone', 'b', 10_000)).toMatchObject({ owner: 'b', token: 2 });
    expect(transactions() - before).toBe(0);
  });

  it('applies a group in the order asked, as if one after the other', async () => {
    const { store } = open();
    const first = await store.tryAcquire('ordered', 'a', 10_000);
    // Release, then acquire by b: b takes the next token.
    const [released, taken] = await Promise.all([
      store.release(first!),
      store.tryAcquire('ordered', 'b', 10_000),
    ]);
    expect(released).toBe(true);
    expect(taken).toMatchObject({ owner: 'b', token: 2 });
    // Acquire by c, then release by b: c is refused while b holds, then b lets go.
    const [refused, releasedB] = await Promise.all([
      store.tryAcquire('ordered', 'c', 10_000),
      store.release(taken!),
    ]);
    expect(refused).toBeNull();
    expect(releasedB).toBe(true);
    // Two acquisitions of one free resource in one group: the first asked wins.
    const [d, e] = await Promise.all([
      store.tryAcquire('ordered', 'd', 10_000),
      store.tryAcquire('ordered', 'e', 10_000),
    ]);
    expect(d).toMatchObject({ owner: 'd', token: 3 });
    expect(e).toBeNull();
  });

  it('a failure inside the transaction fails every member, and none took effect', async () => {
    const { store, failAcquire } = open();
    const held = await store.tryAcquire('kept', 'a', 10_000);
    failAcquire(3); // the third acquisition of the next group throws, after two have run
    const results = await Promise.allSettled([
      store.tryAcquire('x/1', 'a', 10_000),
      store.renew(held!, 30_000),
      store.tryAcquire('x/2', 'a', 10_000),
      store.tryAcquire('x/3', 'a', 10_000),
    ]);
    for (const result of results) {
      expect(result.status).toBe('rejected');
      const reason = (result as PromiseRejectedResult).reason as LeaseError;
      expect(reason).toBeInstanceOf(LeaseError);
      expect(reason.code).toBe('STORE_UNAVAILABLE');
    }
    // Rolled back: the first two acquisitions and the renewal did not happen.
    expect(await store.get('x/1')).toBeNull();
    expect(await store.get('x/2')).toBeNull();
    expect((await store.get('kept'))?.expiresAt).toBe(held!.expiresAt);
    // The store goes on: the same calls succeed, the renewal on the same token.
    const again = await Promise.all([
      store.tryAcquire('x/1', 'a', 10_000),
      store.renew(held!, 30_000),
    ]);
    expect(again[0]?.token).toBe(1);
    expect(again[1]?.token).toBe(1);
  });

  it('waits out another connection’s write lock as one group, then applies all of it', async () => {
    const { store } = open();
    await store.tryAcquire('warm', 'a', 10_000);
    const other = new Database(`${dir.path}/group-${files}.db`, { timeout: 0 });
    other.exec('BEGIN IMMEDIATE');
    const pending = Promise.all(
      Array.from({ length: 10 }, (_, i) => store.tryAcquire(`w/${i}`, 'a', 10_000)),
    );
    await new Promise((resolve) => setTimeout(resolve, 150));
    other.exec('COMMIT');
    other.close();
    const leases = await pending;
    expect(leases.every((l) => l?.token === 1)).toBe(true);
    expect(await store.list({ prefix: 'w/' })).toHaveLength(10);
  });
});
