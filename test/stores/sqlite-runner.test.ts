import { describe, expect, it } from 'vitest';
import { SqliteRunner } from '../../src/stores/sqlite/sqlite-runner.js';
import { rejection } from '../harness/expect-error.js';

const busy = (): Error => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });

/** Holds the thread for `ms`, as a slow statement would. */
function work(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('SqliteRunner', () => {
  it('runs steps one at a time, in the order they were asked for', async () => {
    const runner = new SqliteRunner({ busyTimeoutMs: 5000, identity: undefined });
    const order: number[] = [];
    let busyLeft = 3;
    const steps = Array.from({ length: 10 }, (_, i) =>
      runner.run('renew', () => {
        // The first step finds the file locked a few times; the others wait behind it.
        if (i === 0 && busyLeft-- > 0) throw busy();
        order.push(i);
        return i;
      }),
    );
    expect(await Promise.all(steps)).toEqual([...Array(10).keys()]);
    expect(order).toEqual([...Array(10).keys()]);
  });

  it('gives a free turn back as soon as the step answers or fails, without waiting for the loop', async () => {
    const runner = new SqliteRunner({ busyTimeoutMs: 5000, identity: undefined });
    const order: string[] = [];
    const answered = runner.run('renew', () => {
      order.push('a');
      return 'a';
    });
    const failed = runner.run('release', () => {
      order.push('b');
      throw new Error('disk I/O error');
    });
    const after = runner.run('tryAcquire', () => {
      order.push('c');
      return 'c';
    });
    order.push('same turn of the loop');
    expect(order).toEqual(['a', 'b', 'c', 'same turn of the loop']);
    expect(await answered).toBe('a');
    await expect(failed).rejects.toThrow('disk I/O error');
    expect(await after).toBe('c');
  });

  it('lets renewals and releases go before bulk acquisitions queued earlier', async () => {
    const runner = new SqliteRunner({ busyTimeoutMs: 5000, identity: undefined });
    const order: string[] = [];
    let busyLeft = 3;
    const step = (operation: string, name: string, lockedFirst = false) =>
      runner.run(operation, () => {
        if (lockedFirst && busyLeft-- > 0) throw busy();
        order.push(name);
      });
    // The first acquisition waits for another connection's lock; everything else queues behind it.
    const steps = [
      step('acquireMany', 'a0', true),
      step('acquireMany', 'a1'),
      step('tryAcquire', 'a2'),
      step('renewMany', 'r1'),
      step('list', 'l1'),
      step('release', 'x1'),
      step('renew', 'r2'),
    ];
    await Promise.all(steps);
    // The step holding its turn keeps it; then urgent steps in the order asked, then the rest.
    expect(order).toEqual(['a0', 'r1', 'x1', 'r2', 'a1', 'a2', 'l1']);
  });

  it('does not count time spent behind working steps as time waiting for the lock', async () => {
    const runner = new SqliteRunner({ busyTimeoutMs: 100, identity: undefined });
    let busyLeft = 2;
    const started = performance.now();
    // 20 steps of 15 ms: the last ones wait in turn far longer than busyTimeoutMs, then one of
    // them meets a short lock. It waits that out instead of failing at once.
    const steps = Array.from({ length: 20 }, (_, i) =>
      runner.run('tryAcquire', () => {
        if (i === 15 && busyLeft-- > 0) throw busy();
        work(15);
        return i;
      }),
    );
    expect(await Promise.all(steps)).toEqual([...Array(20).keys()]);
    expect(performance.now() - started).toBeGreaterThan(200);
  });

  it('fails the steps queued behind a step that waited out busyTimeoutMs after one attempt each', async () => {
    const runner = new SqliteRunner({ busyTimeoutMs: 200, identity: undefined });
    const attempts = new Array<number>(5).fill(0);
    const errors = await Promise.all(
      attempts.map((_, i) =>
        rejection(
          runner.run('renew', () => {
            attempts[i]!++;
            throw busy();
          }),
        ),
      ),
    );
    expect(errors.every((e) => e.code === 'STORE_UNAVAILABLE' && e.retryable)).toBe(true);
    expect(errors[0]!.message).toMatch(
      /locked by another connection for \d+ ms \(busyTimeoutMs is 200\)/,
    );
    expect(attempts[0]).toBeGreaterThan(3);
    // One attempt each once the first gave up: steps that waited out 200 ms each, one after the
    // other, would have tried again and again.
    expect(attempts.slice(1)).toEqual([1, 1, 1, 1]);
  });

  it('cuts a batch into chunks in input order, letting the loop run in between', async () => {
    const runner = new SqliteRunner({ busyTimeoutMs: 5000, identity: undefined });
    const items = Array.from({ length: 1234 }, (_, i) => i);
    const chunks: number[] = [];
    // Set by a callback queued before the batch: true by a chunk only if the loop ran in between.
    let loopRan = false;
    setImmediate(() => (loopRan = true));
    const loopRanBefore: boolean[] = [];
    const results = await runner.runChunked('renewMany', items, (chunk) => {
      chunks.push(chunk.length);
      loopRanBefore.push(loopRan);
      return chunk.map((x) => x * 2);
    });
    expect(results).toEqual(items.map((x) => x * 2));
    expect(chunks).toEqual([500, 500, 234]);
    expect(loopRanBefore).toEqual([false, true, true]);
  });
});
