import { expect, it } from 'vitest';
import { RedisStore, type RedisClient } from '../../src/stores/redis/index.js';

/** A client whose commands throw instead of rejecting, as a closed driver may. */
function throwingClient(): RedisClient {
  let layout: string | undefined;
  return {
    evalsha(_sha, numKeys, ...args) {
      // The layout check (one key, the layout string) answers; everything else throws at once.
      if (numKeys === 1 && args.length === 2 && String(args[1]).startsWith('leasehold-redis/'))
        return Promise.resolve((layout ??= String(args[1])));
      throw new Error('Connection is closed.');
    },
    eval() {
      throw new Error('Connection is closed.');
    },
    hmget: () => Promise.reject(new Error('Connection is closed.')),
    duplicate: () => ({
      subscribe: async () => undefined,
      on: () => undefined,
      disconnect: () => {},
    }),
    quit: async () => undefined,
    disconnect: () => {},
  };
}

it('a driver that throws instead of rejecting fails each call at once, alone or grouped', async () => {
  const store = new RedisStore(throwingClient(), { commandTimeoutMs: 60_000 });
  await expect(store.tryAcquire('a', 'me', 5000)).rejects.toMatchObject({
    code: 'STORE_UNAVAILABLE',
  });
  // Many at once: the first goes alone, the rest are grouped; every one fails, none hangs.
  const results = await Promise.allSettled(
    Array.from({ length: 20 }, (_, i) => store.tryAcquire(`r${i}`, 'me', 5000)),
  );
  expect(results.every((r) => r.status === 'rejected')).toBe(true);
  await expect(store.release({ resource: 'a', owner: 'me', token: 1 })).rejects.toMatchObject({
    code: 'STORE_UNAVAILABLE',
  });
  await store.close();
});
