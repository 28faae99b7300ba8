import { afterEach, expect, it } from 'vitest';
import {
  LeaseClient,
  openStore,
  type HeldLease,
  type LeaseError,
  type LeaseStore,
} from '../../src/index.js';
import { rejection, sleep } from '../harness/expect-error.js';
import { freePort } from '../harness/ports.js';
import { waitFor } from '../harness/processes.js';
import type { OpenOptions } from './factory.js';
import { describeStores } from './stores.js';

/** The deadline of every call here: a silent server fails a call in about this long. */
const DEADLINE_MS = 500;
const SHORT: OpenOptions = { deadlineMs: DEADLINE_MS };

/** The next renewal or loss of `held`. */
function nextOutcome(held: HeldLease): Promise<'renewed' | 'lost'> {
  return new Promise((resolve) => {
    held.once('renewed', () => resolve('renewed'));
    held.once('lost', () => resolve('lost'));
  });
}

/** The first answer of `call` once the server is back (it fails while the store reconnects). */
async function answer<T>(call: () => Promise<T>): Promise<T> {
  let result: { value: T } | undefined;
  await waitFor(
    'the store to answer',
    async () => {
      result = { value: await call() };
      return true;
    },
    20_000,
    50,
  );
  return result!.value;
}

/**
 * What every store promises when its server fails: a call on a silent server ends by its deadline
 * with a retryable `STORE_UNAVAILABLE` (never a hang), a holder stops believing at its own
 * deadline whatever the driver reports, and once the server is back the store works again with
 * no lease lost and none granted twice. Runs on the setups whose factory offers the fault
 * controls (`pause`, `restart`, `unreachableUrl`).
 */
describeStores(
  'faults',
  ({ factory, open, reopen }) => {
    const clients: LeaseClient[] = [];
    afterEach(async () => {
      factory.resume?.();
      await Promise.allSettled(clients.splice(0).map((c) => c.close()));
    });

    /** A client on `store` with a heartbeat of a sixth of its TTL, closed after the test. */
    function client(store: LeaseStore, owner: string, ttlMs: number): LeaseClient {
      const c = new LeaseClient({ store, owner, ttlMs, heartbeatMs: Math.floor(ttlMs / 6) });
      clients.push(c);
      return c;
    }

    /**
     * A store with short deadlines. A busy machine can miss such a deadline at the connect, before
     * any fault: opening is tried again, up to three times.
     */
    async function openShort(same?: LeaseStore): Promise<LeaseStore> {
      for (let attempt = 1; ; attempt++) {
        try {
          const store = same ? await reopen(same, SHORT) : await open(SHORT);
          await store.get('warm-up'); // a table or bucket made, a connection open
          return store;
        } catch (error) {
          if (attempt === 3 || (error as LeaseError).code !== 'STORE_UNAVAILABLE') throw error;
        }
      }
    }

    it.skipIf(!factory.unreachableUrl)(
      'an unreachable server gives a retryable STORE_UNAVAILABLE, not a hang, and never the password',
      async () => {
        const port = await freePort(); // nothing listens there
        const error = await rejection(
          (async () => {
            const store = await openStore(factory.unreachableUrl!(port, DEADLINE_MS));
            try {
              await store.get('job');
            } finally {
              await store.close().catch(() => {});
            }
          })(),
        );
        expect([error.code, error.retryable]).toEqual(['STORE_UNAVAILABLE', true]);
        expect(error.message).toContain(`127.0.0.1:${port}`); // says what it could not reach
        expect(error.message).not.toContain('s3cret');
      },
    );

    // A store opened during the pause is part of it on the setups that open a store from a URL,
    // where the store makes its own connections (a setup handing the store a client it connected
    // itself has nothing of the store's to fail there).
    const opensFromUrl = factory.unreachableUrl !== undefined;

    it.skipIf(!factory.pause)(
      'while the server is paused every call, and a store opened meanwhile, fails by its deadline with a retryable STORE_UNAVAILABLE; after resume both work and nothing changed',
      async () => {
        const store = await openShort();
        const lease = (await store.tryAcquire('job', 'a', 30_000))!;
        let opened: LeaseStore | undefined;
        factory.pause!();
        let errors: LeaseError[];
        try {
          errors = await Promise.all(
            [
              () => store.tryAcquire('other', 'a', 5000),
              () => store.renew(lease),
              () => store.renewMany([lease, lease]),
              // Not ours: if it lands after resume, it changes nothing.
              () => store.release({ ...lease, token: lease.token + 1 }),
              () => store.get('job'),
              () => store.list(),
              ...(opensFromUrl
                ? [
                    async () => {
                      opened = await reopen(store, SHORT);
                      await opened.tryAcquire('opened', 'b', 5000);
                    },
                  ]
                : []),
            ].map((call) => rejection(call())),
          );
        } finally {
          factory.resume!();
        }
        for (const error of errors)
          expect([error.code, error.retryable]).toEqual(['STORE_UNAVAILABLE', true]);

        expect(await answer(() => store.renew(lease))).toMatchObject({
          owner: 'a',
          token: lease.token,
        });
        expect(await store.get('job')).toMatchObject({ owner: 'a', token: lease.token });
        if (opensFromUrl) {
          const late = opened ?? (await openShort(store));
          // A grant whose answer the pause withheld may land after resume: the same owner's.
          const grant = await answer(() => late.tryAcquire('opened', 'b', 5000));
          if (grant) expect(grant).toMatchObject({ owner: 'b', token: 1 });
          expect(await late.get('opened')).toMatchObject({ owner: 'b', token: 1 });
        }
      },
    );

    it.skipIf(!factory.pause)(
      'a holder keeps its lease through a pause shorter than its TTL',
      async () => {
        const store = await openShort();
        const held = await client(store, 'holder', 4000).acquire('job');
        const risks: string[] = [];
        held.on('at-risk', (reason) => risks.push(reason));

        factory.pause!();
        await sleep(1200);
        factory.resume!();
        expect(await nextOutcome(held)).toBe('renewed');

        expect(risks.some((r) => r.includes('renewal failed'))).toBe(true); // the pause was felt
        expect(held.signal.aborted).toBe(false);
        expect(held.isValid()).toBe(true);
        expect(await store.get('job')).toMatchObject({ owner: 'holder', token: held.token });
      },
    );

    it.skipIf(!factory.pause)(
      'a pause longer than the TTL aborts the holder at its deadline, before the server returns; a peer then takes over with a higher token',
      async () => {
        const store = await openShort();
        const held = await client(store, 'holder', 1000).acquire('job');
        let paused = false;
        let abortedWhilePaused: boolean | undefined;
        let abortedAt = 0;
        held.signal.addEventListener('abort', () => {
          abortedWhilePaused = paused;
          abortedAt = performance.now();
        });

        paused = true;
        factory.pause!();
        try {
          await waitFor('the holder to give up', () => held.signal.aborted, 10_000, 10);
        } finally {
          paused = false;
          factory.resume!();
        }
        expect(abortedWhilePaused).toBe(true);
        expect(abortedAt).toBeGreaterThanOrEqual(held.validUntil); // at its deadline, not before
        expect((held.signal.reason as LeaseError).code).toBe('LEASE_LOST');
        expect(held.isValid()).toBe(false);

        // A renewal sent during the pause may land after resume and hold the record a little
        // longer: the peer waits it out.
        const peer = client(await openShort(store), 'peer', 1000);
        const taken = await peer.acquire('job', { waitMs: 15_000 });
        expect(taken.token).toBeGreaterThan(held.token);
        expect(await answer(() => store.get('job'))).toMatchObject({
          owner: 'peer',
          token: taken.token,
        });
      },
    );

    it.skipIf(!factory.restart)(
      'a server restart loses no lease and no token: the holder renews after it, or is lost only at its deadline; a watch goes on reporting',
      async () => {
        const store = await openShort();
        for (let i = 0; i < 2; i++)
          await store.release((await store.tryAcquire('job', 'w', 5000))!);
        const held = await client(store, 'holder', 3000).acquire('job');
        expect(held.token).toBe(3);
        const events: string[] = [];
        const watcher = factory.watchEvents ? await openShort(store) : undefined;
        const unwatch = watcher?.watch!('', (e) => events.push(`${e.type} ${e.resource}`));
        await unwatch?.ready;
        const before = (await store.tryAcquire('before', 'a', 60_000))!;

        try {
          await factory.restart!();
          const outcome = await nextOutcome(held);
          if (outcome === 'lost') {
            // Allowed only at its deadline, never early and never "probably still held".
            expect(performance.now()).toBeGreaterThanOrEqual(held.validUntil);
            expect(held.signal.aborted).toBe(true);
          } else {
            expect(held.state).not.toBe('lost');
            expect(await answer(() => store.get('job'))).toMatchObject({
              owner: 'holder',
              token: 3,
            });
          }
          await held.release().catch(() => {});

          const other = client(await openShort(store), 'other', 3000);
          const next = await other.acquire('job', { waitMs: 15_000 });
          expect(next.token).toBe(4);

          if (unwatch) {
            // The watch comes back on its own, in its own time (a store whose watch does not
            // replay misses what happened while it reconnected): releases of fresh resources
            // until one is reported show it is back, then a release of a lease granted before
            // the restart must be reported too.
            let back = false;
            for (let i = 0; i < 30 && !back; i++) {
              const probe = (await answer(() => store.tryAcquire(`after-${i}`, 'a', 60_000)))!;
              expect(await store.release(probe)).toBe(true);
              back = await waitFor(
                `released after-${i}, by the watch`,
                () => events.includes(`released after-${i}`),
                1000,
              ).then(
                () => true,
                () => false,
              );
            }
            expect(back).toBe(true);
            await answer(() => store.release(before)); // may have landed on an earlier try
            await waitFor(
              'the release of a lease granted before the restart, by the watch',
              () => events.includes('released before'),
              20_000,
            );
          }
        } finally {
          unwatch?.();
        }
      },
      60_000, // a JVM restarting on a busy machine, then a takeover
    );
  },
  (factory) => !!(factory.pause || factory.restart || factory.unreachableUrl),
);
