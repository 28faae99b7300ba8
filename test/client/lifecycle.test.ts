import { afterEach, describe, expect, it } from 'vitest';
import { LeaseClient, LeaseError, MemoryStore, type HeldLease } from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';
import type { FaultyStore } from '../harness/faulty-store.js';
import { rig } from './setup.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.allSettled(cleanups.splice(0).map((c) => c()));
});

function tracked(options?: Parameters<typeof rig>[0]) {
  const r = rig(options);
  cleanups.push(async () => {
    (r.store as FaultyStore).mode = 'pass';
    r.store.resumeHung();
    await r.client.close();
    await r.other.close();
  });
  return r;
}

async function code(promise: Promise<unknown>): Promise<string | undefined> {
  return promise.then(
    () => undefined,
    (e: unknown) => (e instanceof LeaseError ? e.code : `not a LeaseError: ${String(e)}`),
  );
}

describe('acquire', () => {
  it('says a grant that came too late to use was given back, not that another owner holds it', async () => {
    const clock = new ManualClock();
    class LateAnswers extends MemoryStore {
      override async tryAcquire(resource: string, owner: string, ttlMs: number) {
        const lease = await super.tryAcquire(resource, owner, ttlMs);
        // The client's answers arrive after the lease's validity deadline.
        if (owner === 'me') clock.jump(ttlMs);
        return lease;
      }
    }
    const store = new LateAnswers({ clock });
    const client = new LeaseClient({ store, owner: 'me', ttlMs: 1000, heartbeatMs: 250, clock });
    cleanups.push(() => client.close());
    const late = await client.acquire('job', { waitMs: 0 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(late).toBeInstanceOf(LeaseError);
    expect((late as LeaseError).code).toBe('LEASE_UNAVAILABLE');
    expect((late as LeaseError).message).toMatch(
      /^lease on "job" was granted, but the store answered after its validity deadline, so it was given back: a longer ttlMs/,
    );
    expect((await store.get('job'))?.owner).toBe(''); // released, not left to lapse

    // Held by someone else: the message says so, as before.
    await store.tryAcquire('other-job', 'them', 60_000);
    const held = await client.acquire('other-job', { waitMs: 0 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((held as LeaseError).message).toBe('lease on "other-job" is held by another owner');
  });

  it('waits while another owner holds it and gets it after the release, with the next token', async () => {
    const { clock, client, other } = tracked();
    const theirs = (await other.tryAcquire('job'))!;
    let mine: HeldLease | undefined;
    const waiting = client.acquire('job', { waitMs: 10_000 }).then((l) => (mine = l));
    await clock.advance(300);
    expect(mine).toBeUndefined();
    await theirs.release();
    await clock.advance(1100);
    await waiting;
    expect(mine!.token).toBe(2);
    expect(mine!.owner).toBe('me');
  });

  it('throws LEASE_UNAVAILABLE when waitMs runs out, and tries once with waitMs 0', async () => {
    const { clock, store, client, other } = tracked();
    await other.tryAcquire('job');
    expect(await code(client.acquire('job', { waitMs: 0 }))).toBe('LEASE_UNAVAILABLE');
    expect(store.calls.tryAcquire).toBe(1);
    const waiting = code(client.acquire('job', { waitMs: 2000 }));
    await clock.advance(2000);
    expect(await waiting).toBe('LEASE_UNAVAILABLE');
    expect(store.calls.tryAcquire).toBeGreaterThan(3);
  });

  it('rejects with the signal reason when aborted, and stops trying', async () => {
    const { clock, store, client, other } = tracked();
    await other.tryAcquire('job');
    const controller = new AbortController();
    const waiting = client.acquire('job', { signal: controller.signal }).catch((e: unknown) => e);
    await clock.advance(100);
    const reason = new Error('shutting down');
    controller.abort(reason);
    expect(await waiting).toBe(reason);
    const calls = store.calls.tryAcquire;
    await clock.advance(5000);
    expect(store.calls.tryAcquire).toBe(calls);
    await expect(client.acquire('job', { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  });

  it('takes over an expired lease whose holder stopped renewing', async () => {
    const { clock, real, client } = tracked();
    const crashed = new LeaseClient({
      store: real,
      owner: 'crashed',
      ttlMs: 1000,
      autoRenew: false,
      clock,
    });
    cleanups.push(() => crashed.close());
    const old = (await crashed.tryAcquire('job'))!;
    const waiting = client.acquire('job', { waitMs: 5000 });
    await clock.advance(1500);
    const mine = await waiting;
    expect(mine.token).toBe(old.token + 1);
    expect(old.state).toBe('lost');
  });

  it('refuses to acquire a resource this client already holds', async () => {
    const { client } = tracked();
    await client.tryAcquire('job');
    expect(await code(client.tryAcquire('job'))).toBe('INVALID_ARGUMENT');
  });

  it('checks acquire options', async () => {
    const { client } = tracked();
    for (const waitMs of [-1, 1.5, NaN, '10'])
      expect(await code(client.acquire('job', { waitMs: waitMs as number }))).toBe(
        'INVALID_ARGUMENT',
      );
    expect(await code(client.acquire('job', { signal: {} as AbortSignal }))).toBe(
      'INVALID_ARGUMENT',
    );
    expect(await code(client.acquire(''))).toBe('INVALID_ARGUMENT');
    expect(await code(client.tryAcquire('x'.repeat(513)))).toBe('INVALID_ARGUMENT');
  });
});

describe('withLease', () => {
  it('runs the work while holding the lease and releases it afterwards', async () => {
    const { real, client } = tracked();
    const result = await client.withLease('job', async (signal, lease) => {
      expect(signal.aborted).toBe(false);
      expect((await real.get('job'))!.owner).toBe('me');
      return lease.token * 10;
    });
    expect(result).toBe(10);
    expect(await real.get('job')).toMatchObject({ owner: '', token: 1 });
    expect(client.held()).toEqual([]);
  });

  it('aborts the work the moment the lease is lost and rejects with LEASE_LOST', async () => {
    const { clock, store, client } = tracked();
    let workSawAbort = false;
    const running = client.withLease('job', (signal) => {
      store.mode = 'hang';
      return new Promise((_, reject) =>
        signal.addEventListener('abort', () => {
          workSawAbort = true;
          reject(signal.reason);
        }),
      );
    });
    const outcome = code(running);
    await clock.advance(1000);
    expect(workSawAbort).toBe(true);
    expect(await outcome).toBe('LEASE_LOST');
  });

  it('rejects with LEASE_LOST even when the work ignored the signal and finished', async () => {
    const { clock, store, client } = tracked();
    const running = client.withLease('job', async () => {
      store.mode = 'fail';
      await clock.advance(1200);
      return 'done';
    });
    expect(await code(running)).toBe('LEASE_LOST');
  });

  it('rejects with LEASE_LOST when the deadline passed during the work even if no timer ran', async () => {
    const { clock, real, client, other } = tracked();
    const running = client.withLease('job', async () => {
      clock.jump(1500); // the event loop was frozen past the deadline
      expect(await other.tryAcquire('job')).not.toBeNull();
      return 'done';
    });
    expect(await code(running)).toBe('LEASE_LOST');
    expect((await real.get('job'))!.owner).toBe('other');
  });

  it("passes the work's own error through and still releases", async () => {
    const { real, client } = tracked();
    const boom = new Error('work failed');
    await expect(client.withLease('job', () => Promise.reject(boom))).rejects.toBe(boom);
    expect(await real.get('job')).toMatchObject({ owner: '' });
  });

  it("never hides the work's error behind a release error", async () => {
    const { store, client } = tracked();
    const boom = new Error('work failed');
    const failures: unknown[] = [];
    client.on('release-failed', (_lease, error) => failures.push(error));
    const running = client.withLease('job', async () => {
      store.mode = 'fail';
      throw boom;
    });
    await expect(running).rejects.toBe(boom);
    expect(failures).toHaveLength(1);
  });
});

describe('release and close', () => {
  it('release aborts the signal with LEASE_RELEASED before giving the lease up', async () => {
    const { real, client } = tracked();
    const lease = (await client.tryAcquire('job'))!;
    let ownerWhenAborted: string | undefined;
    lease.signal.addEventListener('abort', () => {
      void real.get('job').then((r) => (ownerWhenAborted = r?.owner));
    });
    await lease.release();
    expect((lease.signal.reason as LeaseError).code).toBe('LEASE_RELEASED');
    expect(lease.state).toBe('released');
    await lease.release(); // idempotent
    expect(ownerWhenAborted).toBe('me');
    expect(await real.get('job')).toMatchObject({ owner: '', token: 1 });
  });

  it('await using releases the lease at the end of the block', async () => {
    const { real, client } = tracked();
    {
      await using lease = (await client.tryAcquire('job'))!;
      expect(lease.state).toBe('held');
    }
    expect(await real.get('job')).toMatchObject({ owner: '' });
  });

  it('close() releases everything with one releaseMany and stops the heartbeat', async () => {
    const { clock, store, real, client } = tracked();
    const leases = await Promise.all(['a', 'b', 'c', 'd'].map((r) => client.tryAcquire(r)));
    await client.close();
    expect(store.calls.releaseMany).toBe(1);
    expect(store.calls.release).toBe(0);
    expect(client.held()).toEqual([]);
    for (const lease of leases) {
      expect(lease!.state).toBe('released');
      expect((lease!.signal.reason as LeaseError).code).toBe('LEASE_RELEASED');
    }
    expect((await real.list()).every((r) => r.owner === '')).toBe(true);
    const renewals = store.calls.renewMany;
    await clock.advance(5000);
    expect(store.calls.renewMany).toBe(renewals);
    expect(clock.pendingTimers).toBe(0);
    expect(await code(client.tryAcquire('e'))).toBe('CLIENT_CLOSED');
    await client.close(); // idempotent
  });

  it('close() gives up on a store that does not answer after one TTL, with STORE_UNAVAILABLE', async () => {
    const { clock, store, client } = tracked();
    await client.tryAcquire('job');
    store.mode = 'hang';
    const closing = code(client.close());
    await clock.advance(1000);
    expect(await closing).toBe('STORE_UNAVAILABLE');
  });
});

describe('options', () => {
  const store = new MemoryStore();
  const bad: [object, string][] = [
    [{ ttlMs: 99 }, 'ttlMs'],
    [{ ttlMs: 1000.5 }, 'ttlMs'],
    [{ ttlMs: 3000, heartbeatMs: 1001 }, 'heartbeatMs'],
    [{ heartbeatMs: 0 }, 'heartbeatMs'],
    [{ owner: '' }, 'owner'],
    [{ owner: 'o'.repeat(257) }, 'owner'],
    [{ maxClockSkewMs: -1 }, 'maxClockSkewMs'],
    [{ ttlMs: 1000, heartbeatMs: 300, maxClockSkewMs: 700 }, 'maxClockSkewMs'],
    // 2000 − 22 − 1000 = 978 ms of validity: less than two 666 ms beats.
    [{ ttlMs: 2000, heartbeatMs: 666, maxClockSkewMs: 1000 }, 'maxClockSkewMs'],
    [{ autoRenew: 'yes' }, 'autoRenew'],
  ];
  for (const [options, field] of bad) {
    it(`rejects ${JSON.stringify(options)} naming ${field}`, () => {
      let error: unknown;
      try {
        new LeaseClient({ store, ...options });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(LeaseError);
      expect((error as LeaseError).code).toBe('INVALID_ARGUMENT');
      expect((error as LeaseError).message).toContain(field);
    });
  }

  it('rejects a missing store', () => {
    expect(() => new LeaseClient({} as never)).toThrow(/store/);
  });

  it('defaults: 20 s TTL, 5 s heartbeat, the store skew, a unique owner per client', () => {
    const a = new LeaseClient({ store });
    const b = new LeaseClient({ store });
    expect([a.ttlMs, a.heartbeatMs, a.maxClockSkewMs]).toEqual([
      20_000,
      5000,
      store.maxClockSkewMs,
    ]);
    expect(a.owner).not.toBe(b.owner);
    expect(a.owner).toContain(String(process.pid));
  });
});
