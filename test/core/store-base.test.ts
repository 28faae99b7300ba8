import { describe, expect, it } from 'vitest';
import {
  LeaseError,
  MysqlStore,
  PostgresStore,
  type MysqlPool,
  type PgPool,
} from '../../src/index.js';
import { rejection } from '../harness/expect-error.js';

// `init()` of the SQL stores runs through StoreBase like every operation of the contract: refused
// once the store is closed, and a driver error mapped at the store boundary. No server is needed:
// the pools below fail every call.

const broken = (): Promise<never> => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:1'));
const pools = {
  postgres: { query: broken, connect: broken, end: async () => {} } as unknown as PgPool,
  mysql: { query: broken, getConnection: broken, end: async () => {} } as unknown as MysqlPool,
};

describe.each([
  ['PostgresStore', () => new PostgresStore(pools.postgres, { notify: false })],
  ['MysqlStore', () => new MysqlStore(pools.mysql)],
])('%s.init', (_name, make) => {
  it('maps a driver error to a LeaseError naming init', async () => {
    const store = make();
    const error = await rejection(store.init());
    expect(error.code).toBe('STORE_UNAVAILABLE');
    expect(error.message).toContain('init');
    expect(error.message).toContain('ECONNREFUSED');
    await store.close();
  });

  it('is refused once the store is closed, not retryable', async () => {
    const store = make();
    await store.close();
    const error = await rejection(store.init());
    expect(error).toBeInstanceOf(LeaseError);
    expect([error.code, error.message, error.retryable]).toEqual([
      'STORE_UNAVAILABLE',
      'init failed: the store is closed',
      false,
    ]);
  });
});
