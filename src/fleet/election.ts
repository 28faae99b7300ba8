import { ErrorCode, invalidArgument, LeaseError } from '../core/errors.js';
import { checkKnownKeys, checkResource, describe, LIMITS, optionKeys } from '../core/options.js';
import type { LeaseStore } from '../core/store.js';
import { sleep, systemClock, type Clock } from '../core/time.js';
import type { HeldLease } from '../client/held-lease.js';
import { LeaseClient } from '../client/lease-client.js';

/** What `elect` campaigns for, and how. */
export interface ElectOptions {
  /** Where the lease records live (see `openStore`). */
  store: LeaseStore;
  /**
   * The election's name; the lease is taken on the resource `election/<name>`, so the name may have
   * at most 503 UTF-8 bytes (`LIMITS.resourceMaxBytes` less the prefix).
   */
  name: string;
  /** This candidate's id in the lease record. @default `<hostname>:<pid>:<random>` */
  owner?: string;
  /** The leadership lease's TTL, in ms. @default 20000 */
  ttlMs?: number;
  /** How often, in ms, the leader renews; at most `ttlMs / 3`. @default ttlMs / 4 */
  heartbeatMs?: number;
  /** Called when this process becomes leader; `lease.signal` aborts when it stops being leader. */
  onElected: (lease: HeldLease) => void | Promise<void>;
  /** Called when leadership ends: `'lost'` (the lease was lost), `'stopped'` (stop() was called) or `'failed'` (onElected threw). */
  onDemoted?: (reason: 'lost' | 'stopped' | 'failed', error?: unknown) => void;
  /** Told of store errors while campaigning (the campaign goes on after a pause). @default process.emitWarning */
  onError?: (error: unknown) => void;
  /** Where time comes from; inject a `ManualClock` in tests. @default the system clock */
  clock?: Clock;
}

/** A running campaign, as `elect` returns it. */
export interface Election {
  /** Whether this process is the leader right now (reads the clock: false once the deadline passed). */
  isLeader(): boolean;
  /** The leadership lease while leader; its `token` fences the leader's writes. */
  readonly lease: HeldLease | undefined;
  /** Steps down (releasing the lease so another candidate takes over at once) and stops campaigning. */
  stop(): Promise<void>;
  /** `await using election = elect(…)` stops it at the end of the block. */
  [Symbol.asyncDispose](): Promise<void>;
  /**
   * Until `stop()`, a running election keeps the process alive like a listening server; `unref()`
   * lets the process exit anyway (as `server.unref()` does), `ref()` undoes it.
   */
  unref(): Election;
  /** Undoes `unref()`: the running election keeps the process alive again. */
  ref(): Election;
}

const RESOURCE_PREFIX = 'election/';

const ELECT_KEYS = optionKeys<ElectOptions>({
  store: true,
  name: true,
  owner: true,
  ttlMs: true,
  heartbeatMs: true,
  onElected: true,
  onDemoted: true,
  onError: true,
  clock: true,
});

/** The longest election name, in UTF-8 bytes: `election/<name>` must be a valid resource name. */
const ELECTION_NAME_MAX_BYTES = LIMITS.resourceMaxBytes - RESOURCE_PREFIX.length;

/** Checks a name as a resource name, against the room left after the `election/` prefix. */
function checkElectionName(name: unknown): string {
  const bytes = typeof name === 'string' ? Buffer.byteLength(name, 'utf8') : 0;
  if (bytes > ELECTION_NAME_MAX_BYTES)
    throw invalidArgument(
      'name',
      `must be at most ${ELECTION_NAME_MAX_BYTES} UTF-8 bytes (the lease is taken on "${RESOURCE_PREFIX}<name>"), got ${bytes}`,
    );
  return checkResource(name, 'name');
}

/**
 * Campaigns for leadership of `name` until stopped: waits for the lease, calls `onElected`, and
 * campaigns again after losing it. Built on one `LeaseClient` and one resource.
 */
export function elect(options: ElectOptions): Election {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('options', `must be an object, got ${describe(options)}`);
  checkKnownKeys('elect options', options, ELECT_KEYS);
  const resource = `${RESOURCE_PREFIX}${checkElectionName(options.name)}`;
  if (typeof options.onElected !== 'function')
    throw new LeaseError(ErrorCode.INVALID_ARGUMENT, 'onElected must be a function');
  // Checked now: a bad callback would otherwise surface only when leadership ends or a store call fails.
  for (const field of ['onDemoted', 'onError'] as const) {
    const callback: unknown = options[field];
    if (callback !== undefined && typeof callback !== 'function')
      throw invalidArgument(field, `must be a function, got ${describe(callback)}`);
  }
  const client = new LeaseClient({
    store: options.store,
    owner: options.owner,
    ttlMs: options.ttlMs,
    heartbeatMs: options.heartbeatMs,
    clock: options.clock,
  });
  const stopped = new AbortController();
  let current: HeldLease | undefined;

  const campaign = async (): Promise<void> => {
    while (!stopped.signal.aborted) {
      let lease: HeldLease;
      try {
        lease = await client.acquire(resource, { signal: stopped.signal });
      } catch (error) {
        if (stopped.signal.aborted) return;
        // The store is unreachable: report it, and try again after a pause rather than give up.
        report(error);
        if (!(await pause())) return;
        continue;
      }
      current = lease;
      let reason: 'lost' | 'stopped' | 'failed' = 'lost';
      let failure: unknown;
      try {
        await options.onElected(lease);
        await new Promise<void>((resolve) => {
          if (lease.signal.aborted) resolve();
          else lease.signal.addEventListener('abort', () => resolve(), { once: true });
        });
      } catch (error) {
        reason = 'failed';
        failure = error;
      }
      if (stopped.signal.aborted) reason = 'stopped';
      current = undefined;
      if (!lease.isTerminal) await lease.release().catch(report);
      try {
        options.onDemoted?.(reason, reason === 'lost' ? lease.signal.reason : failure);
      } catch (error) {
        process.nextTick(() => {
          throw error;
        });
      }
      // After a failure, pause before campaigning again rather than spin on a crashing onElected.
      if (reason === 'failed' && !(await pause())) return;
    }
  };
  const report = (error: unknown): void => {
    if (options.onError) options.onError(error);
    else
      process.emitWarning(`leasehold election ${JSON.stringify(options.name)}: ${String(error)}`);
  };
  /** Waits a moment on the client's clock; false when the election was stopped meanwhile. */
  const pause = (): Promise<boolean> =>
    sleep(options.clock ?? systemClock, Math.min(client.heartbeatMs, 1000), stopped.signal).then(
      () => true,
      () => false,
    );
  const keepAlive = setInterval(() => undefined, 1 << 30);
  const running = campaign().finally(() => clearInterval(keepAlive));

  const election: Election = {
    isLeader: () => current?.isValid() ?? false,
    get lease() {
      return current;
    },
    async stop() {
      stopped.abort(
        new LeaseError(ErrorCode.CLIENT_CLOSED, `election ${JSON.stringify(options.name)} stopped`),
      );
      current?.revoke('the election was stopped');
      await client.close();
      await running;
    },
    [Symbol.asyncDispose]() {
      return election.stop();
    },
    unref() {
      keepAlive.unref();
      client.unref();
      return election;
    },
    ref() {
      keepAlive.ref();
      client.ref();
      return election;
    },
  };
  return election;
}
