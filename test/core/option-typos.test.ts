import { describe, expect, it } from 'vitest';
import {
  elect,
  isLeaseError,
  LeaseClient,
  LeaseManager,
  MemoryStore,
  openStore,
  SqliteStore,
} from '../../src/index.js';
import { checkKnownKeys } from '../../src/core/options.js';
import { resolveDynamodbOptions } from '../../src/stores/dynamodb/dynamodb-options.js';
import { resolveEtcdOptions } from '../../src/stores/etcd/etcd-options.js';
import { resolveMysqlOptions } from '../../src/stores/mysql/mysql-options.js';
import { resolvePostgresOptions } from '../../src/stores/postgres/postgres-options.js';
import { resolveRedisOptions } from '../../src/stores/redis/redis-options.js';

/** Runs `fn`, which must throw INVALID_ARGUMENT, and returns the message. */
function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(isLeaseError(error, 'INVALID_ARGUMENT')).toBe(true);
    return (error as Error).message;
  }
  throw new Error('expected INVALID_ARGUMENT, but nothing was thrown');
}

async function asyncRefusal(fn: () => Promise<unknown>): Promise<string> {
  try {
    await fn();
  } catch (error) {
    expect(isLeaseError(error, 'INVALID_ARGUMENT')).toBe(true);
    return (error as Error).message;
  }
  throw new Error('expected INVALID_ARGUMENT, but nothing was thrown');
}

/** Typos as a caller without type checking (plain JavaScript, or a cast) would make them. */
const loose = <T>(options: object): T => options as T;

const store = new MemoryStore();

describe('checkKnownKeys', () => {
  it('names the key and the nearest known one', () => {
    expect(refusal(() => checkKnownKeys('thing options', { tabel: 1 }, ['table', 'prefix']))).toBe(
      'thing options: unknown option "tabel"; did you mean "table"?',
    );
  });

  it('lists the known keys when none is within three edits', () => {
    expect(refusal(() => checkKnownKeys('thing options', { colour: 1 }, ['table', 'prefix']))).toBe(
      'thing options: unknown option "colour"; the known options are "table", "prefix"',
    );
  });

  it('passes objects with known keys only, and ignores symbol keys', () => {
    expect(() =>
      checkKnownKeys('thing options', { table: 1, [Symbol('x')]: 2 }, ['table']),
    ).not.toThrow();
  });
});

describe('LeaseClient', () => {
  it('refuses an unknown option of the constructor', () => {
    expect(refusal(() => new LeaseClient(loose({ store, ttl: 1000 })))).toBe(
      'LeaseClient options: unknown option "ttl"; did you mean "ttlMs"?',
    );
  });

  it('refuses an unknown option of acquire before waiting', async () => {
    const client = new LeaseClient({ store, ttlMs: 1000 });
    try {
      expect(await asyncRefusal(() => client.acquire('typo/a', loose({ wait: 0 })))).toBe(
        'acquire options: unknown option "wait"; did you mean "waitMs"?',
      );
      expect(
        await asyncRefusal(() => client.withLease('typo/a', () => 1, loose({ sigal: undefined }))),
      ).toBe('acquire options: unknown option "sigal"; did you mean "signal"?');
    } finally {
      await client.close();
    }
  });

  it('still accepts every valid option', async () => {
    const client = new LeaseClient({
      store,
      owner: 'typo-ok',
      ttlMs: 3000,
      heartbeatMs: 500,
      maxClockSkewMs: 0,
      autoRenew: false,
      clock: undefined,
    });
    try {
      const held = await client.acquire('typo/ok', { waitMs: 0, signal: undefined });
      await held.release();
    } finally {
      await client.close();
    }
  });
});

describe('LeaseManager', () => {
  it('refuses a misspelt callback instead of taking leases and never starting the work', () => {
    expect(
      refusal(
        () => new LeaseManager(loose({ store, resources: ['a'], onAquired: () => undefined })),
      ),
    ).toBe('LeaseManager options: unknown option "onAquired"; did you mean "onAcquired"?');
  });

  it('refuses an unknown option of stop()', async () => {
    const manager = new LeaseManager({
      store,
      resources: [],
      ttlMs: 1000,
      onAcquired: () => undefined,
      onLost: () => undefined,
      settleMs: 0,
    });
    expect(await asyncRefusal(() => manager.stop(loose({ timeout: 5 })))).toBe(
      'stop options: unknown option "timeout"; did you mean "timeoutMs"?',
    );
    await manager.stop({ timeoutMs: 100 });
  });
});

describe('elect', () => {
  it('refuses an unknown option', () => {
    expect(
      refusal(() => elect(loose({ store, name: 'typo', onElected: () => {}, onDemote: () => {} }))),
    ).toBe('elect options: unknown option "onDemote"; did you mean "onDemoted"?');
  });

  it('refuses a misspelt priority or hold-off, naming the option meant', () => {
    expect(
      refusal(() => elect(loose({ store, name: 'typo', onElected: () => {}, priorty: 2 }))),
    ).toBe('elect options: unknown option "priorty"; did you mean "priority"?');
    expect(
      refusal(() =>
        elect(loose({ store, name: 'typo', onElected: () => {}, priority: 2, holdoffMs: 5 })),
      ),
    ).toBe('elect options: unknown option "holdoffMs"; did you mean "holdOffMs"?');
  });

  it('refuses a callback that is not a function at once, not when leadership ends', () => {
    expect(
      refusal(() => elect(loose({ store, name: 'typo', onElected: () => {}, onDemoted: 'x' }))),
    ).toBe('onDemoted must be a function, got "x"');
    expect(
      refusal(() => elect(loose({ store, name: 'typo', onElected: () => {}, onError: 42 }))),
    ).toBe('onError must be a function, got 42');
  });

  it('still accepts every valid option', async () => {
    const election = elect({
      store,
      name: 'typo-ok',
      owner: 'typo-ok',
      ttlMs: 1000,
      heartbeatMs: 250,
      onElected: () => undefined,
      onDemoted: () => undefined,
      onError: () => undefined,
      clock: undefined,
      priority: 1,
      holdOffMs: 1000,
    });
    await election.stop();
  });
});

describe('store options', () => {
  it('memory', async () => {
    expect(refusal(() => new MemoryStore(loose({ maxClockSkew: 10 })))).toBe(
      'MemoryStore options: unknown option "maxClockSkew"; did you mean "maxClockSkewMs"?',
    );
    new MemoryStore({ maxClockSkewMs: 10, clock: undefined });
    await (await openStore('memory:?maxClockSkewMs=5')).close();
  });

  it('sqlite, in code and from a URL', async () => {
    expect(await asyncRefusal(() => SqliteStore.open(':memory:', loose({ busyTimeout: 1 })))).toBe(
      'SqliteStore options: unknown option "busyTimeout"; did you mean "busyTimeoutMs"?',
    );
    await (
      await SqliteStore.open(':memory:', { table: 't', busyTimeoutMs: 10, synchronous: 'normal' })
    ).close();
    await (
      await openStore(
        'sqlite::memory:?table=u&busyTimeoutMs=10&maxClockSkewMs=5&synchronous=normal&watchPollMs=5',
      )
    ).close();
  });

  it('postgres', () => {
    expect(refusal(() => resolvePostgresOptions(loose({ shema: 'x' })))).toBe(
      'PostgresStore options: unknown option "shema"; did you mean "schema"?',
    );
    resolvePostgresOptions({ schema: 's', notify: false, onWatchError: () => {}, label: 'x' });
  });

  it('mysql, with the connection fields open() takes', () => {
    expect(refusal(() => resolveMysqlOptions(loose({ queryTimeout: 5 })))).toBe(
      'MysqlStore options: unknown option "queryTimeout"; did you mean "queryTimeoutMs"?',
    );
    resolveMysqlOptions(
      loose({
        table: 't',
        host: 'h',
        port: 1,
        user: 'u',
        password: 'p',
        database: 'd',
        poolSize: 2,
      }),
    );
  });

  it('redis', () => {
    expect(refusal(() => resolveRedisOptions(loose({ shard: 2 })))).toBe(
      'RedisStore options: unknown option "shard"; did you mean "shards"?',
    );
    resolveRedisOptions({ prefix: 'p:', shards: 2, commandTimeoutMs: 10, onWatchError: () => {} });
  });

  it('dynamodb, with the connection fields and sdk that open() takes', () => {
    expect(refusal(() => resolveDynamodbOptions(loose({ table: 'ttt', regoin: 'x' })))).toBe(
      'DynamodbStore options: unknown option "regoin"; did you mean "region"?',
    );
    resolveDynamodbOptions(
      loose({
        table: 'ttt',
        region: 'us-east-1',
        endpoint: 'http://x',
        connectTimeoutMs: 1,
        sdk: {},
      }),
    );
  });

  it('etcd', () => {
    expect(refusal(() => resolveEtcdOptions(loose({ timeout: 5 })))).toBe(
      'EtcdStore options: unknown option "timeout"; did you mean "timeoutMs"?',
    );
    resolveEtcdOptions({ prefix: '/p/', timeoutMs: 5, maxTxnOps: 8 });
  });
});
