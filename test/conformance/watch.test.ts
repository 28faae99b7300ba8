import { expect, it } from 'vitest';
import { LeaseError, type Lease, type WatchEvent } from '../../src/index.js';
import { waitFor } from '../harness/processes.js';
import { describeStores, expiryWait } from './stores.js';

/** The events of `type` among `events`, as `type resource` lines. */
const lines = (events: readonly WatchEvent[], type?: WatchEvent['type']): string[] =>
  events.filter((e) => !type || e.type === type).map((e) => `${e.type} ${e.resource}`);

/**
 * What every store with `capabilities.watch` promises its `watch` listeners (`src/core/store.ts`):
 * `ready` settles once the watch is in place; a graceful release by any handle on the same records
 * is reported as `released`, once, to each listener whose prefix (matched literally) covers it; a
 * store that reports grants says `acquired` for each new grant and nothing for a renewal, and one
 * that reports expiries says `expired` when a lapsed lease goes; an unsubscribed listener hears
 * nothing more; a listener that throws stops neither the others nor the store (its error is thrown
 * again on the next tick). Stores without a watch have no block here.
 */
describeStores(
  'watch',
  ({ factory, open, reopen, shortTtl }) => {
    const reports = (type: WatchEvent['type']): boolean => factory.watchEvents!.includes(type);

    it('declares a watch, and ready settles once it is in place', async () => {
      const store = await open();
      expect(store.capabilities.watch).toBe(true);
      const unwatch = store.watch!('', () => {});
      await expect(unwatch.ready).resolves.toBeUndefined();
      unwatch();
    });

    it("reports another handle's release under the prefix, once, and no release that was not the owner's", async () => {
      const watcher = await open();
      const writer = await reopen(watcher);
      const jobs: WatchEvent[] = [];
      const all: WatchEvent[] = [];
      const stopJobs = watcher.watch!('jobs/', (e) => jobs.push(e));
      const stopAll = watcher.watch!('', (e) => all.push(e));
      await Promise.all([stopJobs.ready, stopAll.ready]);

      const job = (await writer.tryAcquire('jobs/1', 'a', 60_000))!;
      const other = (await writer.tryAcquire('other/1', 'a', 60_000))!;
      expect(await writer.renew(job)).not.toBeNull(); // a renewal is not a new grant
      expect(await writer.release({ ...job, token: job.token + 1 })).toBe(false); // not ours
      expect(await writer.release(other)).toBe(true);
      expect(await writer.release(job)).toBe(true);
      await waitFor('both releases', () => lines(all, 'released').length >= 2, 10_000);

      // Events of one resource come in order: a refused release would have come before this one.
      expect(lines(all, 'released').sort()).toEqual(['released jobs/1', 'released other/1']);
      expect(lines(jobs)).toEqual([
        ...(reports('acquired') ? ['acquired jobs/1'] : []),
        'released jobs/1',
      ]);
      stopJobs();
      stopAll();
    });

    it('reports a release through the same handle too, and a batch release once per lease', async () => {
      const store = await open();
      const heard: WatchEvent[] = [];
      const unwatch = store.watch!('b/', (e) => heard.push(e));
      await unwatch.ready;
      const leases = (await store.acquireMany(['b/1', 'b/2', 'b/3'], 'a', 60_000)).map(
        (o) => o.lease!,
      );
      expect(await store.release(leases[0]!)).toBe(true);
      expect(await store.releaseMany([leases[1]!, leases[2]!, leases[0]!])).toEqual([
        true,
        true,
        false,
      ]);
      await waitFor('three releases', () => lines(heard, 'released').length >= 3, 10_000);
      expect(lines(heard, 'released').sort()).toEqual([
        'released b/1',
        'released b/2',
        'released b/3',
      ]);
      unwatch();
    });

    it.skipIf(!factory.watchEvents?.includes('expired'))(
      'reports a lease that lapsed as expired, not released',
      async () => {
        const watcher = await open();
        const writer = await reopen(watcher);
        const heard: WatchEvent[] = [];
        const unwatch = watcher.watch!('lapse/', (e) => heard.push(e));
        await unwatch.ready;
        await writer.tryAcquire('lapse/1', 'a', shortTtl); // never renewed: its holder died, say
        await waitFor(
          'the expiry',
          () => heard.some((e) => e.type === 'expired'),
          expiryWait(writer, shortTtl) + 10_000,
        );
        expect(lines(heard)).toEqual([
          ...(reports('acquired') ? ['acquired lapse/1'] : []),
          'expired lapse/1',
        ]);
        unwatch();
      },
    );

    it('stops calling a listener once it unsubscribes (twice is harmless), and watches again afterwards', async () => {
      const watcher = await open();
      const writer = await reopen(watcher);
      const stopped: string[] = [];
      const kept: string[] = [];
      const stop = watcher.watch!('u/', (e) => stopped.push(`${e.type} ${e.resource}`));
      const keep = watcher.watch!('u/', (e) => kept.push(`${e.type} ${e.resource}`));
      await Promise.all([stop.ready, keep.ready]);
      const release = async (resource: string): Promise<void> => {
        expect(await writer.release((await writer.tryAcquire(resource, 'a', 60_000))!)).toBe(true);
      };

      await release('u/1');
      await waitFor('u/1', () => kept.includes('released u/1'), 10_000);
      expect(stopped).toContain('released u/1');
      stop();
      stop();
      await release('u/2');
      // Both listeners are called in the same delivery: what the one left hears, the other would have.
      await waitFor('u/2, by the listener left', () => kept.includes('released u/2'), 10_000);
      expect(stopped).not.toContain('released u/2');
      keep(); // the last listener: the store's watch stops

      const again: string[] = [];
      const watchAgain = watcher.watch!('u/', (e) => again.push(`${e.type} ${e.resource}`));
      await watchAgain.ready;
      await release('u/3');
      await waitFor('u/3, by a new listener', () => again.includes('released u/3'), 10_000);
      // What happened before the new watch began is not news: no event for u/1 or u/2.
      expect(again.filter((event) => !event.endsWith(' u/3'))).toEqual([]);
      watchAgain();
    });

    it('takes a full resource name as a prefix: a waiter woken by the release takes the next token', async () => {
      const waiter = await open();
      const holder = await reopen(waiter);
      const held = (await holder.tryAcquire('wake', 'h', 60_000))!;
      let ready: Promise<void> | undefined;
      const taken = new Promise<Lease | null>((resolve) => {
        const unwatch = waiter.watch!('wake', (event) => {
          if (event.type !== 'released' || event.resource !== 'wake') return;
          unwatch();
          void waiter.tryAcquire('wake', 'w', 5000).then(resolve);
        });
        ready = unwatch.ready;
      });
      await ready;
      expect(await holder.release(held)).toBe(true);
      expect(await taken).toMatchObject({ owner: 'w', token: held.token + 1 });
    });

    it('keeps calling the other listeners when one throws, throws its error again, and the store goes on', async () => {
      const watcher = await open();
      const writer = await reopen(watcher);
      const uncaught: unknown[] = [];
      const onUncaught = (e: unknown): void => void uncaught.push(e);
      process.prependListener('uncaughtException', onUncaught);
      const heard: string[] = [];
      const stopThrowing = watcher.watch!('t/', (e) => {
        if (e.type === 'released') throw new Error('listener bug');
      });
      const stopHearing = watcher.watch!('t/', (e) => heard.push(`${e.type} ${e.resource}`));
      try {
        await Promise.all([stopThrowing.ready, stopHearing.ready]);
        for (const resource of ['t/a', 't/b'])
          await writer.release((await writer.tryAcquire(resource, 'a', 60_000))!);
        await waitFor('both releases', () => releasedLines(heard).length === 2, 10_000);
        await waitFor('the errors thrown again', () => uncaught.length === 2, 10_000);
      } finally {
        process.off('uncaughtException', onUncaught);
      }
      expect(uncaught).toEqual([new Error('listener bug'), new Error('listener bug')]);
      stopThrowing();
      // The watching store still works, and its watch still reports.
      const lease = (await watcher.tryAcquire('t/c', 'b', 60_000))!;
      expect(await watcher.release(lease)).toBe(true);
      await waitFor('t/c', () => heard.includes('released t/c'), 10_000);
      stopHearing();
    });

    it('refuses a listener that is not a function and a prefix that is not a string, and any watch once closed', async () => {
      const store = await open();
      const code = (call: () => unknown): string | undefined => {
        try {
          call();
        } catch (error) {
          expect(error).toBeInstanceOf(LeaseError);
          return (error as LeaseError).code;
        }
        return undefined;
      };
      expect(code(() => store.watch!('', 'listener' as never))).toBe('INVALID_ARGUMENT');
      expect(code(() => store.watch!(42 as never, () => {}))).toBe('INVALID_ARGUMENT');
      await store.close();
      expect(code(() => store.watch!('', () => {}))).toBe('STORE_UNAVAILABLE');
    });
  },
  (factory) => factory.watchEvents !== undefined,
);

/** The `released` lines of `heard`. */
function releasedLines(heard: readonly string[]): string[] {
  return heard.filter((line) => line.startsWith('released '));
}
