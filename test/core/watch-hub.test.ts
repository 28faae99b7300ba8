import { describe, expect, it } from 'vitest';
import { ErrorCode, LeaseError } from '../../src/core/errors.js';
import type { WatchEvent } from '../../src/core/store.js';
import {
  resolveOnWatchError,
  warnWatchError,
  WatchHub,
  type WatchSource,
} from '../../src/core/watch-hub.js';

/** A source that records what the hub told it and answers `ready` as told. */
function recorder(ready: () => Promise<void> = () => Promise.resolve()): WatchSource & {
  calls: string[];
} {
  const calls: string[] = [];
  return {
    calls,
    added: ({ first, newPrefix }) => {
      calls.push(`added first=${first} newPrefix=${newPrefix}`);
      return ready();
    },
    removed: ({ last, prefixGone }) =>
      void calls.push(`removed last=${last} prefixGone=${prefixGone}`),
  };
}

const unavailable = (message: string): LeaseError =>
  new LeaseError(ErrorCode.STORE_UNAVAILABLE, message);

describe('WatchHub', () => {
  it('tells the source of the first and last listener, and of prefixes coming and going', () => {
    const source = recorder();
    const hub = new WatchHub(() => {}, source);
    const a = hub.add('jobs/', () => {});
    const b = hub.add('jobs/', () => {});
    const c = hub.add('mail/', () => {});
    expect(hub.prefixes()).toEqual(['jobs/', 'mail/']);
    a();
    a(); // twice: told once
    c();
    b();
    expect(source.calls).toEqual([
      'added first=true newPrefix=true',
      'added first=false newPrefix=false',
      'added first=false newPrefix=true',
      'removed last=false prefixGone=false',
      'removed last=false prefixGone=true',
      'removed last=true prefixGone=true',
    ]);
    expect(hub.active).toBe(false);
  });

  it("gives each listener the source's ready promise", async () => {
    let fail = false;
    const hub = new WatchHub(
      () => {},
      recorder(() => (fail ? Promise.reject(unavailable('down')) : Promise.resolve())),
    );
    await expect(hub.add('', () => {}).ready).resolves.toBeUndefined();
    fail = true;
    await expect(hub.add('', () => {}).ready).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
  });

  it('delivers by prefix; a throwing listener stops neither the others nor the caller', async () => {
    const hub = new WatchHub(() => {}, recorder());
    const heard: string[] = [];
    hub.add('jobs/', () => {
      throw new Error('a bug in a listener');
    });
    hub.add('jobs/', (event) => heard.push(`jobs: ${event.resource}`));
    hub.add('', (event) => heard.push(`all: ${event.resource}`));
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown): void => void uncaught.push(error);
    process.prependListener('uncaughtException', onUncaught);
    try {
      const events: WatchEvent[] = [
        { type: 'released', resource: 'jobs/1' },
        { type: 'expired', resource: 'mail/1' },
      ];
      for (const event of events) hub.deliver(event);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    expect(heard).toEqual(['jobs: jobs/1', 'all: jobs/1', 'all: mail/1']);
    expect(uncaught).toEqual([new Error('a bug in a listener')]); // thrown again, not swallowed
    expect(hub.matches('jobs/2')).toBe(true);
    hub.clear();
    expect(hub.matches('jobs/2')).toBe(false);
  });

  it('reports a run of failures once, and again after recovering', () => {
    const reported: string[] = [];
    const hub = new WatchHub((error) => reported.push(error.message), recorder());
    hub.failed(unavailable('first'));
    hub.failed(unavailable('second'));
    hub.recovered();
    hub.failed(unavailable('third'));
    expect(reported).toEqual(['first', 'third']);
  });
});

describe('the onWatchError option', () => {
  it('defaults to a process warning and refuses what is no function', () => {
    const mine = (): void => {};
    expect(resolveOnWatchError(undefined)).toBe(warnWatchError);
    expect(resolveOnWatchError(mine)).toBe(mine);
    expect(() => resolveOnWatchError('log' as never)).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        message: expect.stringContaining('onWatchError'),
      }),
    );
  });
});
