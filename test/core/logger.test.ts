import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  LeaseClient,
  LeaseError,
  LeaseholdChannel,
  LeaseManager,
  MemoryStore,
  type HeldLease,
  type LeaseholdLogger,
} from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { Fleet, names } from '../fleet/fleet-rig.js';
import { clientRig, HEARTBEAT, TTL } from '../observability/scenarios.js';

type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Level[] = ['debug', 'info', 'warn', 'error'];

/** A logger shaped like pino's: `(fields, message)` per level, and `isLevelEnabled`. */
class RecordingLogger implements LeaseholdLogger {
  readonly lines: { level: Level; fields: Record<string, unknown>; message: string }[] = [];
  levelChecks = 0;
  constructor(private readonly level: Level = 'debug') {}
  isLevelEnabled(level: string): boolean {
    this.levelChecks++;
    return ORDER.indexOf(level as Level) >= ORDER.indexOf(this.level);
  }
  private write(level: Level, fields: object, message: string): void {
    if (!this.isLevelEnabled(level)) throw new Error(`${level} logged while disabled`);
    this.lines.push({ level, fields: fields as Record<string, unknown>, message });
  }
  debug(fields: object, message: string): void {
    this.write('debug', fields, message);
  }
  info(fields: object, message: string): void {
    this.write('info', fields, message);
  }
  warn(fields: object, message: string): void {
    this.write('warn', fields, message);
  }
  error(fields: object, message: string): void {
    this.write('error', fields, message);
  }
  messages(): string[] {
    return this.lines.map((l) => `${l.level} ${l.message}`);
  }
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.allSettled(cleanups.splice(0).map((c) => c()));
  vi.restoreAllMocks();
});

describe('the logger option of LeaseClient', () => {
  it('logs acquired and released at debug, store errors, at-risk and loss at warn', async () => {
    const logger = new RecordingLogger();
    const { clock, link, a, close } = clientRig({ logger });
    cleanups.push(close);
    const r1 = (await a.tryAcquire('obs/r1'))!;
    await clock.advance(300); // renewals are not logged
    await r1.release();
    link.mode = 'fail';
    await expect(a.tryAcquire('obs/r2')).rejects.toThrow(LeaseError);
    link.mode = 'pass';
    await a.tryAcquire('obs/r3');
    link.mode = 'hang';
    await clock.advance(3 * TTL);
    expect(logger.messages()).toEqual([
      'debug lease acquired',
      'debug lease released',
      'warn store call failed',
      'debug lease acquired',
      'warn lease at risk',
      'warn store call failed',
      'warn lease lost: its work was aborted',
      'warn store call failed',
    ]);
    expect(logger.lines[0]!.fields).toEqual({
      owner: 'obs-a',
      resource: 'obs/r1',
      token: 1,
      ttlMs: TTL,
    });
    expect(logger.lines[2]!.fields).toEqual({
      owner: 'obs-a',
      operation: 'tryAcquire',
      code: 'STORE_UNAVAILABLE',
      count: 1,
      err: 'tryAcquire: connection refused (injected)',
    });
    expect(logger.lines[4]!.fields).toMatchObject({ resource: 'obs/r3', token: 1 });
    expect(logger.lines[6]!.fields).toMatchObject({
      owner: 'obs-a',
      resource: 'obs/r3',
      token: 1,
      cause: 'store-error',
      err: expect.stringContaining('lost'),
    });
  });

  it('builds nothing for a level the logger has turned off', async () => {
    const logger = new RecordingLogger('warn');
    const debug = vi.spyOn(logger, 'debug');
    const { a, close } = clientRig({ logger });
    cleanups.push(close);
    const lease = (await a.tryAcquire('obs/quiet'))!;
    await lease.release();
    expect(debug).not.toHaveBeenCalled();
    expect(logger.levelChecks).toBe(2); // asked, and told no, once per event
    expect(logger.lines).toEqual([]);
  });

  it('is silent by default, and accepts console', async () => {
    const clock = new ManualClock();
    const store = new MemoryStore({ clock });
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const debug = vi.spyOn(console, 'debug').mockImplementation(() => undefined);
    const silent = new LeaseClient({ store, owner: 'silent', ttlMs: TTL, clock });
    const noisy = new LeaseClient({ store, owner: 'noisy', ttlMs: TTL, clock, logger: console });
    cleanups.push(
      () => silent.close(),
      () => noisy.close(),
    );
    await silent.tryAcquire('obs/one');
    expect(debug).not.toHaveBeenCalled();
    await noisy.tryAcquire('obs/two');
    expect(debug).toHaveBeenCalledWith(
      { owner: 'noisy', resource: 'obs/two', token: 1, ttlMs: TTL },
      'lease acquired',
    );
    expect(warn).not.toHaveBeenCalled();
  });

  it('accepts a logger typed as pino’s (overloaded log functions, isLevelEnabled, child)', async () => {
    // The signature of pino's log methods (`LogFn` in pino.d.ts), and the members leasehold reads.
    interface PinoLogFn {
      <T extends object>(obj: T, msg?: string, ...args: unknown[]): void;
      (obj: unknown, msg?: string, ...args: unknown[]): void;
      (msg: string, ...args: unknown[]): void;
    }
    interface PinoLike {
      level: string;
      debug: PinoLogFn;
      info: PinoLogFn;
      warn: PinoLogFn;
      error: PinoLogFn;
      isLevelEnabled(level: string): boolean;
      child(bindings: object): PinoLike;
    }
    const written: unknown[][] = [];
    const log: PinoLogFn = (...args: unknown[]) => void written.push(args);
    const pino: PinoLike = {
      level: 'debug',
      debug: log,
      info: log,
      warn: log,
      error: log,
      isLevelEnabled: () => true,
      child: () => pino,
    };
    const clock = new ManualClock();
    const client = new LeaseClient({
      store: new MemoryStore({ clock }),
      owner: 'pino',
      ttlMs: TTL,
      clock,
      logger: pino.child({ component: 'leases' }),
    });
    cleanups.push(() => client.close());
    await client.tryAcquire('obs/p');
    expect(written).toEqual([
      [{ owner: 'pino', resource: 'obs/p', token: 1, ttlMs: TTL }, 'lease acquired'],
    ]);
  });

  it('refuses a logger without the four methods, naming the option and the method', () => {
    const store = new MemoryStore();
    for (const logger of [{ debug() {}, info() {}, warn() {} }, 'pino', null]) {
      const attempt = () => new LeaseClient({ store, logger: logger as never });
      expect(attempt).toThrow(LeaseError);
      expect(attempt).toThrow(/^logger /);
    }
    expect(() => new LeaseClient({ store, logger: { info() {} } as never })).toThrow(
      /logger must have a debug\(fields, message\) method/,
    );
    expect(
      () => new LeaseManager({ store, resources: [], logger: { debug() {} } as never }),
    ).toThrow(/logger must have a info/);
  });

  it('never writes a store URL’s password, in logs or on the channels', async () => {
    const clock = new ManualClock();
    const real = new MemoryStore({ clock });
    const secret = 'hunter2-secret';
    const leaky = new Proxy(real, {
      get(target, property) {
        if (property === 'tryAcquire' || property === 'releaseMany')
          return () =>
            Promise.reject(
              new LeaseError(
                'STORE_UNAVAILABLE',
                `connect ECONNREFUSED for postgres://bob:${secret}@127.0.0.1:5432/leases`,
              ),
            );
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
      },
    });
    const logger = new RecordingLogger();
    const client = new LeaseClient({ store: leaky, owner: 'obs', ttlMs: TTL, clock, logger });
    cleanups.push(() => client.close());
    const published: unknown[] = [];
    const listener = (message: unknown): void => void published.push(message);
    subscribe(LeaseholdChannel.storeError, listener);
    try {
      await expect(client.tryAcquire('obs/x')).rejects.toThrow(LeaseError);
    } finally {
      unsubscribe(LeaseholdChannel.storeError, listener);
    }
    expect(published).toHaveLength(1);
    expect(logger.lines).toHaveLength(1);
    const written = JSON.stringify([published, logger.lines]);
    expect(written).toContain('postgres://bob:***@127.0.0.1:5432/leases');
    expect(written).not.toContain(secret);
  });
});

describe('the logger option of LeaseManager', () => {
  let fleet: Fleet | undefined;
  afterEach(async () => {
    await fleet?.stopAll();
    fleet = undefined;
  });

  it('logs start, membership, handoffs, takeovers and failed work, and hands the logger to its client', async () => {
    const logger = new RecordingLogger();
    const resources = names(2, 'obs/');
    fleet = new Fleet({ resources, ttlMs: TTL, heartbeatMs: HEARTBEAT, reconcileMs: 500 });
    const outsider = new LeaseClient({
      store: fleet.store,
      owner: 'outsider',
      ttlMs: TTL,
      autoRenew: false,
      clock: fleet.clock,
    });
    cleanups.push(() => outsider.close());
    await outsider.tryAcquire(resources[0]!);
    let failOnce = true;
    const w1 = await fleet.join({
      logger,
      onAcquired: (lease: HeldLease) => {
        if (lease.resource === resources[0] && failOnce) {
          failOnce = false;
          throw new Error('the work could not start');
        }
        return new Promise<void>((resolve) =>
          lease.signal.addEventListener('abort', () => resolve()),
        );
      },
    });
    await fleet.clock.advance(1500); // takes the outsider's lapsed lease over; its work throws
    await fleet.join();
    await fleet.clock.advance(2500); // hands one lease to the newcomer
    await w1.manager.stop();
    const lines = logger.messages();
    const at = (message: string): number => lines.indexOf(message);
    expect(at('info fleet membership changed')).toBeGreaterThanOrEqual(0);
    expect(at('info fleet worker started')).toBeGreaterThan(at('info fleet membership changed'));
    expect(at('info took over an expired lease')).toBeGreaterThan(at('info fleet worker started'));
    expect(at('error onAcquired failed; the lease is handed back')).toBeGreaterThan(
      at('info took over an expired lease'),
    );
    expect(at('debug lease handed off')).toBeGreaterThan(0);
    expect(lines.at(-1)).toBe('info fleet worker stopped');
    // The client's own lines, for the membership lease and the resources.
    expect(lines.filter((l) => l === 'debug lease acquired').length).toBeGreaterThanOrEqual(3);
    const takeover = logger.lines.find((l) => l.message === 'took over an expired lease')!;
    expect(takeover.fields).toMatchObject({
      group: 'default',
      owner: 'w1',
      resource: resources[0],
      previousOwner: 'outsider',
      latencyMs: expect.any(Number),
    });
    const failed = logger.lines.find((l) => l.level === 'error')!;
    expect(failed.fields).toMatchObject({
      resource: resources[0],
      err: 'the work could not start',
    });
    const handed = logger.lines.find((l) => l.message === 'lease handed off')!;
    expect(handed.fields).toMatchObject({ group: 'default', owner: 'w1', reason: 'balance' });
    // Nothing at warn: nothing went wrong with the store or the leases.
    expect(logger.lines.filter((l) => l.level === 'warn')).toEqual([]);
  });

  it('logs a failed reconcile at warn', async () => {
    const logger = new RecordingLogger('warn');
    fleet = new Fleet({
      resources: names(2, 'obs/'),
      ttlMs: TTL,
      heartbeatMs: HEARTBEAT,
      reconcileMs: 500,
    });
    const w = await fleet.join({
      logger,
      resources: () => {
        if (fleet!.clock.monotonic() > 100)
          throw new LeaseError('STORE_UNAVAILABLE', 'resources() failed');
        return names(2, 'obs/');
      },
    });
    expect(w.manager.held()).toHaveLength(2);
    await fleet.clock.advance(600);
    expect(logger.lines[0]).toEqual({
      level: 'warn',
      fields: {
        group: 'default',
        owner: 'w1',
        code: 'STORE_UNAVAILABLE',
        err: 'resources() failed',
      },
      message: 'reconcile failed; retrying',
    });
  });
});
