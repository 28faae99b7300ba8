import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { checkOut } from '../../src/drivers/pg-checkout.js';

// The node-postgres side is tested against a real server in postgres-faults.test.ts; these are the
// two shapes of pool `checkOut` also accepts.
describe('checkOut', () => {
  it('uses a pool that answers only with a promise, and guards each connection once', async () => {
    const connection = new EventEmitter();
    const pool = { connect: () => Promise.resolve(connection) };
    expect(await checkOut(pool)).toBe(connection);
    expect(await checkOut(pool)).toBe(connection);
    expect(connection.listenerCount('error')).toBe(1);
    expect(() => connection.emit('error', new Error('FATAL'))).not.toThrow();
  });

  it("rejects with the pool's error, from either form", async () => {
    const refused = new Error('too many clients');
    await expect(checkOut({ connect: (callback) => callback?.(refused, undefined) })).rejects.toBe(
      refused,
    );
    await expect(checkOut({ connect: () => Promise.reject(refused) })).rejects.toBe(refused);
  });
});
