import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Lease } from '../../src/index.js';
import { NatsStore } from '../../src/stores/nats/index.js';
import { runBatch, type BatchTransition } from '../../src/stores/nats/nats-batch.js';
import type { SentAnswer } from '../../src/stores/nats/nats-transitions.js';
import { describeServer } from '../harness/describe-server.js';
import { NatsServer, natsUnavailable } from '../harness/nats-server.js';

interface Item {
  readonly resource: string;
  readonly n: number;
}

/**
 * A transition whose answers the test hands out: `send` (or `full`, when `send` declines) parks
 * each item until `answer` is called for it, and the log shows what started and ended when.
 */
function scripted(options: { sends?: (item: Item) => boolean } = {}) {
  const waiting = new Map<number, (error: Error | undefined, result: string | undefined) => void>();
  const log: string[] = [];
  let inFlight = 0;
  let most = 0;
  const begin = (item: Item, how: string): void => {
    inFlight++;
    most = Math.max(most, inFlight);
    log.push(`${how} ${item.n}`);
  };
  const transition: BatchTransition<Item, string> = {
    send(item: Item, done: SentAnswer<string>): boolean {
      if (options.sends && !options.sends(item)) return false;
      begin(item, 'send');
      waiting.set(item.n, (error, result) => {
        inFlight--;
        done(error, result);
      });
      return true;
    },
    full(item: Item): Promise<string> {
      begin(item, 'full');
      return new Promise((resolve, reject) =>
        waiting.set(item.n, (error, result) => {
          inFlight--;
          if (error) reject(error);
          else resolve(result ?? `full ${item.n}`);
        }),
      );
    },
  };
  const answer = async (n: number, error?: Error, result: string | null = `sent ${n}`) => {
    const settle = waiting.get(n);
    if (!settle) throw new Error(`item ${n} is not in flight (log: ${log.join(', ')})`);
    waiting.delete(n);
    settle(error, result ?? undefined);
    await new Promise((resolve) => setImmediate(resolve)); // let the batch react
  };
  return {
    transition,
    answer,
    log,
    inFlight: () => [...waiting.keys()],
    most: () => most,
  };
}

const items = (...resources: string[]): Item[] => resources.map((resource, n) => ({ resource, n }));

describe('runBatch', () => {
  it('keeps at most `window` items in flight and answers in input order, whatever order the answers come in', async () => {
    const script = scripted();
    const batch = runBatch(items('a', 'b', 'c', 'd', 'e'), 2, script.transition);
    expect(script.inFlight()).toEqual([0, 1]);
    await script.answer(1);
    expect(script.inFlight()).toEqual([0, 2]);
    await script.answer(2);
    await script.answer(3);
    expect(script.inFlight()).toEqual([0, 4]);
    await script.answer(4);
    await script.answer(0);
    expect(await batch).toEqual(['sent 0', 'sent 1', 'sent 2', 'sent 3', 'sent 4']);
    expect(script.most()).toBe(2);
  });

  it('runs the items of one resource one after another, in input order, without holding up the rest', async () => {
    const script = scripted();
    const batch = runBatch(items('a', 'a', 'b', 'a', 'c'), 3, script.transition);
    // The second and third "a" wait for the first; "b" and "c" fill the window meanwhile.
    expect(script.inFlight()).toEqual([0, 2, 4]);
    await script.answer(2);
    await script.answer(0);
    expect(script.inFlight()).toEqual([4, 1]);
    await script.answer(1);
    expect(script.inFlight()).toEqual([4, 3]);
    await script.answer(3);
    await script.answer(4);
    expect(await batch).toEqual(['sent 0', 'sent 1', 'sent 2', 'sent 3', 'sent 4']);
    expect(script.log.filter((l) => ['0', '1', '3'].includes(l.split(' ')[1]!))).toEqual([
      'send 0',
      'send 1',
      'send 3',
    ]);
  });

  it('takes the full transition when the one-write form does not apply or cannot decide', async () => {
    const script = scripted({ sends: (item) => item.resource !== 'unknown' });
    const batch = runBatch(items('unknown', 'stale', 'fresh'), 8, script.transition);
    expect(script.log).toEqual(['full 0', 'send 1', 'send 2']);
    await script.answer(1, undefined, null); // the known revision went stale: read and decide
    expect(script.log).toEqual(['full 0', 'send 1', 'send 2', 'full 1']);
    await script.answer(0, undefined, 'full 0');
    await script.answer(1, undefined, 'full 1');
    await script.answer(2);
    expect(await batch).toEqual(['full 0', 'full 1', 'sent 2']);
  });

  it('starts nothing after a failure, and rejects with the first error once the items in flight settle', async () => {
    const script = scripted();
    let settled = false;
    const batch = runBatch(items('a', 'b', 'c', 'd', 'a'), 2, script.transition);
    batch.then(
      () => (settled = true),
      () => (settled = true),
    );
    await script.answer(1, new Error('no answer in time'));
    expect(script.inFlight()).toEqual([0]); // nothing new started
    expect(settled).toBe(false); // item 0 is still in flight
    await script.answer(0, new Error('a later error'));
    await expect(batch).rejects.toThrow('no answer in time');
    expect(script.log).toEqual(['send 0', 'send 1']);
  });

  it('answers an empty batch at once', async () => {
    expect(await runBatch([], 4, scripted().transition)).toEqual([]);
  });
});

describeServer('NATS batches on a private nats-server', natsUnavailable(), () => {
  let server: NatsServer;
  const stores: NatsStore[] = [];
  let buckets = 0;

  beforeAll(async () => {
    server = await NatsServer.start();
  });
  afterAll(async () => {
    await Promise.allSettled(stores.map((s) => s.close()));
    await server?.stop();
  });

  async function open(bucket: string, clock?: { now: () => number }, params = '') {
    const store = await NatsStore.open(
      `${server.url}?bucket=${bucket}&maxClockSkewMs=0&timeoutMs=2000${params}`,
      clock ? { clock } : {},
    );
    stores.push(store);
    return store;
  }

  it('renewMany never moves expiresAt backwards: a lease another handle renewed later keeps the later expiry', async () => {
    const bucket = `batch_${++buckets}`;
    const t0 = 1_800_000_000_000;
    const older = { now: () => t0 };
    const newer = { now: () => t0 };
    const a = await open(bucket, older);
    const b = await open(bucket, newer);
    const leases = (await a.acquireMany(['n/1', 'n/2', 'n/3'], 'holder', 2000)).map(
      (o) => o.lease!,
    );
    newer.now = () => t0 + 1500;
    expect(await b.renew(leases[1]!)).toMatchObject({ expiresAt: t0 + 3500 });
    older.now = () => t0 + 500; // a's batch was computed earlier; its write of n/2 is stale
    const renewed = await a.renewMany(leases);
    expect(renewed.map((l) => l?.expiresAt)).toEqual([t0 + 2500, t0 + 3500, t0 + 2500]);
    expect((await b.get('n/2'))!.expiresAt).toBe(t0 + 3500);
    expect((await b.get('n/1'))!.expiresAt).toBe(t0 + 2500);
  });

  it('a batch larger than its window renews and releases every lease', async () => {
    const store = await open(`batch_${++buckets}`, undefined, '&concurrency=7');
    const names = Array.from({ length: 50 }, (_, i) => `w/${i}`);
    const leases = (await store.acquireMany(names, 'a', 5000)).map((o) => o.lease!);
    const renewed = await store.renewMany(leases, 9000);
    expect(renewed.map((l) => l?.resource)).toEqual(names);
    expect(renewed.every((l, i) => l!.token === leases[i]!.token && l!.ttlMs === 9000)).toBe(true);
    const records = await store.list({ prefix: 'w/', limit: 100 });
    const byName = new Map(records.map((r) => [r.resource, r.expiresAt]));
    expect(renewed.every((l) => byName.get(l!.resource) === l!.expiresAt)).toBe(true);
    expect((await store.releaseMany(renewed as Lease[])).every((r) => r)).toBe(true);
    expect((await store.list({ prefix: 'w/', limit: 100 })).every((r) => r.owner === '')).toBe(
      true,
    );
  });
});
