import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ErrorCode, isLeaseError } from '../../src/index.js';
import { PostgresFence, type PgFenceClient } from '../../src/fence/index.js';
import { PostgresServer, postgresUnavailable } from '../harness/postgres-server.js';
import { waitFor } from '../harness/processes.js';

const unavailable = postgresUnavailable();
if (unavailable && !process.env.CI) {
  console.warn(
    `\n!!! SKIPPING PostgresFence tests: no private PostgreSQL here (${unavailable}) !!!\n`,
  );
}

// In CI a missing PostgreSQL fails these tests (the server start throws) instead of skipping them.
describe.skipIf(unavailable && !process.env.CI)('PostgresFence', () => {
  let server: PostgresServer;
  let pool: pg.Pool;
  let fence: PostgresFence;
  let log: string;
  let n = 0;

  beforeAll(async () => {
    server = await PostgresServer.start();
    pool = new pg.Pool({ connectionString: server.url, max: 10 });
    // A user's pool watches its own idle connections: one still closing when the server stops at
    // the end is told FATAL, and a pool with no 'error' listener would throw it.
    pool.on('error', () => {});
  });
  afterAll(async () => {
    await pool?.end();
    await server?.stop();
  });
  beforeEach(async () => {
    n++;
    log = `log_${n}`;
    await pool.query(`CREATE TABLE ${log} (id bigserial PRIMARY KEY, token bigint NOT NULL)`);
    fence = new PostgresFence(pool, { table: `fence_${n}` });
    await fence.init();
    await fence.init(); // idempotent
  });

  const append = (token: number) => async (client: PgFenceClient) => {
    const { rows } = await client.query(`INSERT INTO ${log} (token) VALUES ($1) RETURNING id`, [
      token,
    ]);
    return Number(rows[0]!.id);
  };
  const logged = async (): Promise<number[]> =>
    (await pool.query(`SELECT token FROM ${log} ORDER BY id`)).rows.map((r) => Number(r.token));

  it('accepts the current token, and the same token again, and rejects an older one without running fn', async () => {
    expect(await fence.highest('ledger')).toBeNull();
    expect(await fence.write('ledger', 2, append(2))).toEqual({ accepted: true, value: 1 });
    expect(await fence.write('ledger', 2, append(2))).toEqual({ accepted: true, value: 2 });
    let ran = false;
    expect(
      await fence.write('ledger', 1, () => {
        ran = true;
      }),
    ).toEqual({ accepted: false });
    expect(ran).toBe(false);
    expect(await fence.write('ledger', 3, append(3))).toMatchObject({ accepted: true });
    expect(await fence.highest('ledger')).toBe(3);
    expect(await fence.write('other', 1, append(1))).toMatchObject({ accepted: true });
    expect(await logged()).toEqual([2, 2, 3, 1]);
    // Every connection went back to the pool outside a transaction.
    expect(pool.totalCount).toBe(pool.idleCount);
  });

  it('rolls back the token with the write when fn throws, and rethrows its error', async () => {
    await fence.write('ledger', 2, append(2));
    const boom = new Error('boom');
    await expect(
      fence.write('ledger', 5, async (client) => {
        await append(5)(client);
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await fence.highest('ledger')).toBe(2);
    expect(await logged()).toEqual([2]);
    expect(await fence.write('ledger', 3, append(3))).toMatchObject({ accepted: true });
  });

  it('does not call a write accepted when a failed statement inside fn made COMMIT roll back', async () => {
    const write = fence.write('ledger', 7, async (client) => {
      await append(7)(client);
      await client.query('SELECT 1/0').catch(() => undefined); // a helper that logs and carries on
      return 'written';
    });
    await expect(write).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: /rolled it back/,
    });
    expect(await logged()).toEqual([]);
    expect(await fence.highest('ledger')).toBeNull();
    expect(pool.totalCount).toBe(pool.idleCount);
  });

  it('makes a stale writer wait on the row lock, then judges it against the committed token', async () => {
    await fence.write('ledger', 1, append(1));
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let inside = false;
    // The new holder (token 2) is inside its write, holding the fence row, when the old one (1) comes.
    const current = fence.write('ledger', 2, async (client) => {
      await append(2)(client);
      inside = true;
      await gate;
      return 'current';
    });
    await waitFor('the new holder to be inside its write', () => inside);
    let staleRan = false;
    const stale = fence.write('ledger', 1, () => {
      staleRan = true;
    });
    await waitFor('the stale writer to wait for the row lock', async () => {
      const { rows } = await pool.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO "fence_%'`,
      );
      return rows[0].n === 1;
    });
    open();
    expect(await current).toEqual({ accepted: true, value: 'current' });
    expect(await stale).toEqual({ accepted: false });
    expect(staleRan).toBe(false);
    expect(await logged()).toEqual([1, 2]);
  });

  it('keeps accepted writes in token order under a burst of concurrent writers', async () => {
    const tokens = [7, 3, 12, 1, 9, 15, 4, 11, 2, 14, 6, 10, 13, 5, 8, 16, 1, 16, 12, 3];
    const results = await Promise.all(tokens.map((t) => fence.write('ledger', t, append(t))));
    const tokensLogged = await logged();
    expect(tokensLogged.length).toBe(results.filter((r) => r.accepted).length);
    expect(tokensLogged).toEqual([...tokensLogged].sort((a, b) => a - b));
    expect(tokensLogged.at(-1)).toBe(16);
    expect(tokensLogged.filter((t) => t === 16)).toHaveLength(2);
    expect(await fence.highest('ledger')).toBe(16);
  });

  it('queues writes through one Client instead of interleaving their transactions', async () => {
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    try {
      const single = new PostgresFence(client, { table: `fence_${n}` });
      const results = await Promise.allSettled([
        single.write('ledger', 2, append(2)),
        single.write('ledger', 1, append(1)),
        single.write('ledger', 3, async (c) => {
          await append(3)(c);
          throw new Error('no');
        }),
        single.write('ledger', 2, append(2)),
      ]);
      expect(results.map((r) => (r.status === 'fulfilled' ? r.value : String(r.reason)))).toEqual([
        { accepted: true, value: 1 },
        { accepted: false },
        'Error: no',
        { accepted: true, value: 3 },
      ]);
      expect(await single.write('ledger', 2, append(2))).toMatchObject({ accepted: true });
      expect(await logged()).toEqual([2, 2, 2]); // id 2 went to the rolled-back write
      expect(await single.highest('ledger')).toBe(2);
    } finally {
      await client.end();
    }
  });

  it('checks its input and names the field', async () => {
    for (const [resource, token, field] of [
      ['', 1, 'resource'],
      ['r', 0, 'token'],
      ['r', 2 ** 53, 'token'],
    ] as const) {
      const error = await fence.write(resource, token, () => 1).catch((e: unknown) => e);
      expect(isLeaseError(error, ErrorCode.INVALID_ARGUMENT), String(error)).toBe(true);
      expect((error as Error).message).toMatch(new RegExp(`^${field} `));
    }
    const missing = new PostgresFence(pool, { table: 'never_created' });
    const error = await missing.write('r', 1, () => 1).catch((e: unknown) => e);
    expect(isLeaseError(error, ErrorCode.STORE_UNAVAILABLE)).toBe(true);
    expect((error as Error).message).toMatch(/does not exist/);
    expect(pool.totalCount).toBe(pool.idleCount);
  });
});
