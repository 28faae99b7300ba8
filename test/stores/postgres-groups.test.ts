import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LeaseError, LIMITS, type Lease, type LeaseStore } from '../../src/index.js';
import { FAIR_SLOTS, QUEUE_MARK } from '../../src/client/fair-line.js';
import { permitResources } from '../../src/core/permits.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { freshNamespace } from '../conformance/factory.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';
import { countingPool } from '../harness/pg-counting-pool.js';
import { PostgresServer, postgresUnavailable } from '../harness/postgres-server.js';
import { shuffled } from '../harness/shuffled.js';
import { waitFor } from '../harness/processes.js';

const unavailable = postgresUnavailable();

const slots = (name: string): string[] =>
  Array.from({ length: FAIR_SLOTS }, (_, i) => `${name}${QUEUE_MARK}${String(i).padStart(3, '0')}`);

describeServer('PostgresStore acquireAll / acquireFirst', unavailable, () => {
  let server: PostgresServer;
  let admin: pg.Pool;
  const stores: LeaseStore[] = [];
  const track = <S extends LeaseStore>(store: S): S => (stores.push(store), store);
  const open = (table: string, poolSize = 4): Promise<PostgresStore> =>
    PostgresStore.open(server.url, { table, poolSize }).then(track);

  beforeAll(async () => {
    server = await PostgresServer.start();
    admin = new pg.Pool({ connectionString: server.url, max: 3 });
    admin.on('error', () => {});
  });
  afterAll(async () => {
    await Promise.allSettled(stores.map((s) => s.close()));
    await admin?.end();
    await server?.stop();
  });

  /** Every row of the table, as `resource owner@token`, in resource order. */
  async function rows(table: string): Promise<string[]> {
    const { rows: all } = await admin.query(
      `SELECT resource, owner, token FROM "${table}" ORDER BY resource`,
    );
    return all.map((r: Record<string, string>) => `${r.resource} ${r.owner}@${r.token}`);
  }

  /** Resolves once `n` statements wait for a lock (a row lock or another's insert). */
  async function waitForLockWaits(n = 1): Promise<void> {
    for (let i = 0; i < 300; i++) {
      const { rows: r } = await admin.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'`,
      );
      if (r[0].n >= n) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`fewer than ${n} statements started waiting for a lock`);
  }

  it('declares groups of up to LIMITS.groupMaxSize as one atomic call', async () => {
    const store = await open(freshNamespace());
    expect(store.capabilities).toEqual({
      clock: 'store',
      batch: true,
      watch: true,
      atomicGroupMax: LIMITS.groupMaxSize,
      data: true,
    });
  });

  it('takes or refuses a group of 2, 10 and atomicGroupMax in one statement and one round trip', async () => {
    const counted = countingPool(server.url);
    const table = freshNamespace();
    const store = track(new PostgresStore(counted.pool, { table }));
    await store.init();
    const measured: Record<string, [number, number]> = {};
    const measure = async <T>(name: string, call: () => Promise<T>): Promise<T> => {
      const [s0, r0] = [counted.statements(), counted.roundTrips()];
      const result = await call();
      measured[name] = [counted.statements() - s0, counted.roundTrips() - r0];
      return result;
    };
    for (const size of [2, 10, store.capabilities.atomicGroupMax]) {
      const names = Array.from({ length: size }, (_, i) => `g${size}/${i}`);
      const leases = await measure(`acquireAll(${size}) granted`, () =>
        store.acquireAll(names, 'a', 30_000),
      );
      expect(leases?.map((l) => [l.resource, l.token])).toEqual(names.map((n) => [n, 1]));
      // The last member held by someone else: the group is refused.
      await store.release(leases!.at(-1)!);
      await store.releaseMany(leases!.slice(0, -1));
      await store.tryAcquire(names.at(-1)!, 'other', 30_000);
      expect(
        await measure(`acquireAll(${size}) refused`, () => store.acquireAll(names, 'a', 30_000)),
      ).toBeNull();
    }
    console.log('statements, round trips per group:', measured);
    expect(Object.keys(measured)).toHaveLength(6);
    for (const [name, counts] of Object.entries(measured))
      expect([name, ...counts]).toEqual([name, 1, 1]);
    await counted.pool.end();
  });

  it('takes the first free of 5 permits or 256 fair-line slots in one statement and one round trip', async () => {
    const counted = countingPool(server.url);
    const table = freshNamespace();
    const store = track(new PostgresStore(counted.pool, { table }));
    await store.init();
    const measured: Record<string, [number, number]> = {};
    const measure = async <T>(name: string, call: () => Promise<T>): Promise<T> => {
      const [s0, r0] = [counted.statements(), counted.roundTrips()];
      const result = await call();
      measured[name] = [counted.statements() - s0, counted.roundTrips() - r0];
      return result;
    };
    for (const [label, names] of [
      ['5 permits', permitResources('sem', 5)],
      [`${FAIR_SLOTS} slots`, slots('line')],
    ] as const) {
      // Never written: the first is taken.
      const first = await measure(`${label}: none written`, () =>
        store.acquireFirst(names, 'a', 30_000),
      );
      expect(first).toMatchObject({ resource: names[0], token: 1 });
      // All but the last held: the last, written and released before, is taken.
      const rest = (await store.acquireMany(names.slice(1), 'a', 30_000)).map((o) => o.lease!);
      await store.release(rest.at(-1)!);
      const last = await measure(`${label}: the last free`, () =>
        store.acquireFirst(names, 'b', 30_000),
      );
      expect(last).toMatchObject({ resource: names.at(-1), owner: 'b', token: 2 });
      const none = await measure(`${label}: none free`, () =>
        store.acquireFirst(names, 'c', 30_000),
      );
      expect(none).toBeNull();
    }
    console.log('statements, round trips per acquireFirst:', measured);
    expect(Object.keys(measured)).toHaveLength(6);
    for (const [name, counts] of Object.entries(measured))
      expect([name, ...counts]).toEqual([name, 1, 1]);
    await counted.pool.end();
  });

  it('a refused group writes nothing: no record created, no token raised, seen by get and list', async () => {
    const table = freshNamespace();
    const store = await open(table);
    const released = (await store.tryAcquire('r/released', 'b', 60_000))!;
    await store.release(released);
    const theirs = (await store.tryAcquire('r/held', 'b', 60_000))!;
    const names = ['r/new', 'r/released', 'r/held', 'r/zz-new'];
    const before = await store.list({ prefix: 'r/' });
    expect(await store.acquireAll(names, 'a', 5000)).toBeNull();
    expect(await store.acquireAll([...names].reverse(), 'a', 5000)).toBeNull();
    expect(await store.list({ prefix: 'r/' })).toEqual(before);
    expect(await store.get('r/new')).toBeNull();
    expect(await store.get('r/released')).toEqual({ ...pick(released), owner: '', expiresAt: 0 });
    expect(await store.get('r/held')).toEqual(pick(theirs));
    // A group refused because its caller already holds a member is refused the same way.
    const mine = (await store.tryAcquire('r/mine', 'a', 60_000))!;
    expect(await store.acquireAll(['r/new', 'r/mine'], 'a', 5000)).toBeNull();
    expect(await store.get('r/mine')).toEqual(pick(mine));
    expect(await store.get('r/new')).toBeNull();
  });

  it('refuses, writing nothing, a group whose member was taken after the statement began', async () => {
    const counted = countingPool(server.url);
    const table = freshNamespace();
    const store = track(new PostgresStore(counted.pool, { table }));
    await store.init();
    await store.release((await store.tryAcquire('t/a', 'x', 60_000))!);
    const client = await admin.connect();
    let group: Promise<Lease[] | null> | undefined;
    const [s0, r0] = [counted.statements(), counted.roundTrips()];
    let connections = 0;
    try {
      // A first record for t/c made in a transaction the group's statement begins before: its
      // snapshot sees no record there, so it is not refused up front; its insert has to wait.
      await client.query('BEGIN');
      await client.query(`INSERT INTO "${table}" VALUES ('t/c', 'c', 1, 99999999999999)`);
      connections = counted.connections();
      group = store.acquireAll(['t/c', 't/a', 't/b'], 'a', 5000);
      await waitForLockWaits();
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    expect(await group).toBeNull();
    // The error reaches the caller on its ErrorResponse; the ReadyForQuery that ends the round
    // trip follows it.
    await waitFor('the ReadyForQuery', () => counted.roundTrips() > r0);
    expect([counted.statements() - s0, counted.roundTrips() - r0]).toEqual([1, 1]);
    // t/a and t/b were written by the statement before it reached t/c, and undone with it.
    expect(await rows(table)).toEqual(['t/a @1', 't/c c@1']);
    // The refusal is an answer: the connection it came on is kept.
    expect(counted.connections()).toBe(connections);
    const leases = await store.acquireAll(['t/a', 't/b'], 'a', 5000);
    expect(leases?.map((l) => l.token)).toEqual([2, 1]);
    await counted.pool.end();
  });

  it('passes over a permit another statement has locked, and takes the next', async () => {
    const table = freshNamespace();
    const store = await open(table);
    const names = permitResources('lk', 3);
    await store.releaseMany((await store.acquireMany(names, 'x', 60_000)).map((o) => o.lease!));
    const client = await admin.connect();
    try {
      await client.query('BEGIN');
      await client.query(`SELECT FROM "${table}" WHERE resource = $1 FOR UPDATE`, [names[0]]);
      // Not waiting for the lock: the next free permit.
      expect(await store.acquireFirst(names, 'a', 5000)).toMatchObject({
        resource: names[1],
        token: 2,
      });
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    expect(await store.acquireFirst(names, 'b', 5000)).toMatchObject({
      resource: names[0],
      token: 2,
    });
  });

  it('takes a later permit when the first unwritten one was taken after the statement began', async () => {
    const table = freshNamespace();
    const store = await open(table);
    const names = ['f/0', 'f/1', 'f/2'];
    // f/0 held, f/1 never written, f/2 released: f/1 comes first and is tried first.
    await store.tryAcquire('f/0', 'x', 60_000);
    await store.release((await store.tryAcquire('f/2', 'x', 60_000))!);
    const client = await admin.connect();
    let first: Promise<Lease | null> | undefined;
    try {
      await client.query('BEGIN');
      await client.query(`INSERT INTO "${table}" VALUES ('f/1', 'c', 1, 99999999999999)`);
      first = store.acquireFirst(names, 'a', 5000);
      await waitForLockWaits();
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    expect(await first).toMatchObject({ resource: 'f/2', owner: 'a', token: 2 });
    expect(await rows(table)).toEqual(['f/0 x@1', 'f/1 c@1', 'f/2 a@2']);
  });

  it('asks once more when the only free candidates had no record and the one tried was created meanwhile', async () => {
    const counted = countingPool(server.url);
    const table = freshNamespace();
    const store = track(new PostgresStore(counted.pool, { table }));
    await store.init();
    const client = await admin.connect();
    let first: Promise<Lease | null> | undefined;
    const [s0, r0] = [counted.statements(), counted.roundTrips()];
    try {
      await client.query('BEGIN');
      await client.query(`INSERT INTO "${table}" VALUES ('n/0', 'c', 1, 99999999999999)`);
      first = store.acquireFirst(['n/0', 'n/1', 'n/2'], 'a', 5000);
      await waitForLockWaits();
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    // The first statement lost n/0 and took nothing; the second saw n/0 held and took n/1.
    expect(await first).toMatchObject({ resource: 'n/1', owner: 'a', token: 1 });
    expect([counted.statements() - s0, counted.roundTrips() - r0]).toEqual([2, 2]);
    expect(await rows(table)).toEqual(['n/0 c@1', 'n/1 a@1']);
    await counted.pool.end();
  });

  it('decides expiry on the server clock inside the statement', async () => {
    const table = freshNamespace();
    const store = await open(table);
    await store.acquireAll(['e/a', 'e/b'], 'x', 60_000);
    const setExpiry = (resource: string, offsetMs: number) =>
      admin.query(
        `UPDATE "${table}" SET expires_at = (extract(epoch from clock_timestamp()) * 1000)::bigint + $2
         WHERE resource = $1`,
        [resource, offsetMs],
      );
    // e/b lapses a minute ago on the server clock, e/a in a minute: still live.
    await setExpiry('e/a', 60_000);
    await setExpiry('e/b', -60_000);
    expect(await store.acquireAll(['e/a', 'e/b'], 'a', 5000)).toBeNull();
    expect(await store.acquireFirst(['e/a', 'e/b'], 'a', 5000)).toMatchObject({
      resource: 'e/b',
      token: 2,
    });
    await setExpiry('e/a', -1);
    await setExpiry('e/b', -1);
    const serverNow = async (): Promise<number> =>
      Number(
        (await admin.query(`SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS ms`))
          .rows[0].ms,
      );
    const t0 = await serverNow();
    const group = (await store.acquireAll(['e/a', 'e/b'], 'a', 10_000))!;
    const t1 = await serverNow();
    expect(group.map((l) => l.token)).toEqual([2, 3]);
    // One reading of the server clock for the group.
    expect(group[0]!.expiresAt).toBe(group[1]!.expiresAt);
    expect(group[0]!.expiresAt).toBeGreaterThanOrEqual(t0 + 10_000);
    expect(group[0]!.expiresAt).toBeLessThanOrEqual(t1 + 10_000);
  });

  it('groups racing over crossing sets on several connections never share a member or deadlock', async () => {
    const table = freshNamespace();
    const handles = await Promise.all([0, 1, 2, 3].map(() => open(table, 2)));
    const names = Array.from({ length: 12 }, (_, i) => `x/${String(i).padStart(2, '0')}`);
    // Half the records exist (released) beforehand, half are first written by the race.
    const setup = (
      await handles[0]!.acquireMany(
        names.filter((_, i) => i % 2),
        'setup',
        60_000,
      )
    ).map((o) => o.lease!);
    await handles[0]!.releaseMany(setup);
    const tokens = new Map(setup.map((l) => [l.resource, l.token]));
    for (let round = 0; round < 12; round++) {
      const sets = Array.from({ length: 8 }, (_, k) =>
        shuffled(names, round * 31 + k).slice(0, 2 + ((round + k) % 5)),
      );
      const results = await Promise.all([
        ...sets.map((set, k) => handles[k % handles.length]!.acquireAll(set, `g${k}`, 60_000)),
        // Single acquires and a batch across the same records, in other orders.
        handles[1]!
          .tryAcquire(names[round % names.length]!, 's', 60_000)
          .then((l) => (l ? [l] : null)),
        handles[2]!
          .acquireMany(shuffled(names, round).slice(0, 4), 'm', 60_000)
          .then((outcomes) => outcomes.flatMap((o) => (o.lease ? [o.lease] : []))),
        handles[3]!
          .acquireFirst(shuffled(names, round + 50), 'f', 60_000)
          .then((l) => (l ? [l] : null)),
      ]);
      const owners = new Map<string, string>();
      for (const leases of results) {
        for (const lease of leases ?? []) {
          expect(owners.get(lease.resource), `${lease.resource} granted twice`).toBeUndefined();
          owners.set(lease.resource, lease.owner);
          expect(lease.token).toBeGreaterThan(tokens.get(lease.resource) ?? 0);
          tokens.set(lease.resource, lease.token);
        }
      }
      // The file holds exactly what was granted: no member of a refused group stayed written.
      for (const name of names) {
        const record = await handles[3]!.get(name);
        const live = record && record.owner !== '' ? record.owner : undefined;
        expect([name, live]).toEqual([name, owners.get(name)]);
        if (record) expect(record.token).toBe(tokens.get(name));
      }
      await handles[0]!.releaseMany(results.flatMap((leases) => leases ?? []));
    }
  });

  it('acquireFirst racing on several connections never gives one permit twice nor more than N', async () => {
    const table = freshNamespace();
    const handles = await Promise.all([0, 1, 2].map(() => open(table, 4)));
    for (let round = 0; round < 8; round++) {
      // Fresh records in odd rounds, the same (released) ones in even rounds.
      const names = permitResources(`sem${round % 2 === 0 ? '' : round}`, 5);
      const callers = Array.from({ length: 12 }, (_, k) =>
        handles[k % handles.length]!.acquireFirst(shuffled(names, round * 7 + k), `c${k}`, 60_000),
      );
      const granted = (await Promise.all(callers)).filter((l): l is Lease => l !== null);
      expect(granted.length).toBeLessThanOrEqual(names.length);
      expect(new Set(granted.map((l) => l.resource)).size).toBe(granted.length);
      // Twelve callers over five permits with nobody else: every permit goes.
      expect(granted.length).toBe(names.length);
      for (const lease of granted)
        expect(await handles[0]!.get(lease.resource)).toEqual(pick(lease));
      await handles[1]!.releaseMany(granted);
    }
  });

  it('reports a failing statement as a LeaseError, never a refusal, and a slow one by its deadline', async () => {
    const table = freshNamespace();
    const store = await open(table);
    await store.init();
    await admin.query(`CREATE FUNCTION "${table}_boom"() RETURNS trigger LANGUAGE plpgsql AS $$
                       BEGIN
                         IF new.resource = 'b/boom' THEN RAISE EXCEPTION 'no such resource allowed'; END IF;
                         IF new.resource = 'b/slow' THEN PERFORM pg_sleep(2); END IF;
                         RETURN new;
                       END $$`);
    await admin.query(
      `CREATE TRIGGER boom BEFORE INSERT ON "${table}" FOR EACH ROW EXECUTE FUNCTION "${table}_boom"()`,
    );
    const failed = await rejection(store.acquireAll(['b/1', 'b/boom', 'b/2'], 'a', 5000));
    expect([failed.code, failed.retryable]).toEqual(['STORE_UNAVAILABLE', false]);
    expect(failed.message).toContain('acquireAll failed: no such resource allowed');
    const first = await rejection(store.acquireFirst(['b/boom', 'b/1'], 'a', 5000));
    expect(first.message).toContain('acquireFirst failed: no such resource allowed');
    expect(await store.list({ prefix: 'b/' })).toEqual([]);
    const quick = track(await PostgresStore.open(server.url, { table, statementTimeoutMs: 300 }));
    const timedOut = await rejection(quick.acquireAll(['b/slow', 'b/3'], 'a', 5000));
    expect(timedOut).toBeInstanceOf(LeaseError);
    expect([timedOut.code, timedOut.retryable]).toEqual(['STORE_UNAVAILABLE', true]);
    const slowFirst = await rejection(quick.acquireFirst(['b/slow'], 'a', 5000));
    expect([slowFirst.code, slowFirst.retryable]).toEqual(['STORE_UNAVAILABLE', true]);
    expect(await store.list({ prefix: 'b/' })).toEqual([]);
  });
});

function pick({ resource, owner, token, expiresAt }: Lease) {
  return { resource, owner, token, expiresAt };
}
