import type { EventEmitter } from 'node:events';

/** What `untilReady` needs of a worker process. */
export interface ReadyWorker {
  /** The last lines it wrote to stderr, for the failure message. */
  readonly stderr: string;
}

/**
 * Resolves with `worker` once `fleet` emits an `event` that `isReady` accepts; rejects, naming the
 * worker and its last stderr line, when `fleet` emits `exit` for it first or `timeoutMs` passes.
 * The fleet's wait for a worker process it started.
 */
export function untilReady<W extends ReadyWorker, E>(
  fleet: EventEmitter,
  worker: W,
  name: string,
  isReady: (event: E) => boolean,
  timeoutMs: number,
  what = 'join',
): Promise<W> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(`did not ${what} in time`), timeoutMs);
    const onEvent = (event: E): void => {
      if (isReady(event)) done();
    };
    const onExit = (exited: W): void => {
      if (exited === worker) fail(`exited before ${what.replace(/^join/, 'joining')}`);
    };
    const cleanup = (): void => {
      clearTimeout(timer);
      fleet.off('event', onEvent);
      fleet.off('exit', onExit);
    };
    const done = (): void => {
      cleanup();
      resolve(worker);
    };
    const fail = (why: string): void => {
      cleanup();
      const detail = worker.stderr.trim().split('\n').at(-1) ?? '';
      reject(new Error(`worker ${name} ${why}${detail ? `: ${detail}` : ''}`));
    };
    fleet.on('event', onEvent);
    fleet.on('exit', onExit);
  });
}
