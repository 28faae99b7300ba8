import { ErrorCode, invalidArgument, LeaseError } from '../core/errors.js';
import { checkKnownKeys, describe } from '../core/options.js';
import { checkData } from '../core/lease-data.js';
import { sleep, systemClock } from '../core/time.js';
import type { HeldLease } from '../client/held-lease.js';
import { LeaseClient } from '../client/lease-client.js';
import { checkPreference, Candidates, type CandidateSeen } from './election-candidates.js';
import { ELECT_KEYS, type DemotedReason, type ElectOptions } from './election-options.js';
import {
  checkElectionName,
  readLeader,
  RESOURCE_PREFIX,
  termData,
  type LeaderInfo,
} from './election-record.js';

/** A running campaign, as `elect` returns it. */
export interface Election {
  /** Whether this process is the leader right now (reads the clock: false once the deadline passed). */
  isLeader(): boolean;
  /** The leadership lease while leader; its `token` fences the leader's writes. */
  readonly lease: HeldLease | undefined;
  /** The current leader as the store has it (this process or another), or `null` when none. */
  leader(): Promise<LeaderInfo | null>;
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
  const published =
    options.data === undefined ? undefined : (checkData(options.data, 'data') ?? undefined);
  if (published !== undefined && !options.store.capabilities?.data)
    throw new LeaseError(
      ErrorCode.NOT_SUPPORTED,
      'elect data: this store does not keep lease data (capabilities.data is false)',
    );
  const client = new LeaseClient({
    store: options.store,
    owner: options.owner,
    ttlMs: options.ttlMs,
    heartbeatMs: options.heartbeatMs,
    clock: options.clock,
  });
  const clock = options.clock ?? systemClock;
  const preference = checkPreference(options, resource, client);
  const stopped = new AbortController();
  let current: HeldLease | undefined;
  const candidates = preference && new Candidates(options.store, resource, client.owner, clock);
  let registration: HeldLease | undefined;
  /** Keeps this candidate's registration held (acquires it again after it was lost). */
  const register = async (): Promise<void> => {
    if (registration && !registration.isTerminal && registration.isValid()) return;
    registration = await client.acquire(preference!.registration, {
      signal: stopped.signal,
      waitMs: 2 * client.ttlMs,
    });
  };
  /**
   * While `lease` is this candidate's term: every heartbeat, the registrations of candidates of
   * higher priority; once one of them has been seen for `holdOffMs`, the term is given up.
   * Resolves `true` when it yielded, `false` when the term ended otherwise.
   */
  const yieldWhenOutranked = async (lease: HeldLease): Promise<boolean> => {
    const seen = new Map<string, number>();
    while (!lease.signal.aborted && !stopped.signal.aborted) {
      try {
        await sleep(clock, client.heartbeatMs, lease.signal);
      } catch {
        return false;
      }
      let higher: CandidateSeen[];
      try {
        higher = await candidates!.above(preference!.priority);
      } catch (error) {
        report(error);
        continue;
      }
      const now = clock.monotonic();
      for (const key of [...seen.keys()]) if (!higher.some((c) => c.key === key)) seen.delete(key);
      for (const c of higher) if (!seen.has(c.key)) seen.set(c.key, now);
      const ready = higher.find((c) => now - seen.get(c.key)! >= preference!.holdOffMs);
      if (ready && !lease.signal.aborted) {
        await lease.release().catch(report);
        return true;
      }
    }
    return false;
  };

  const campaign = async (): Promise<void> => {
    while (!stopped.signal.aborted) {
      let lease: HeldLease;
      try {
        if (preference) {
          await register();
          // A live candidate of higher priority waits too: the lease is its to take.
          if ((await candidates!.above(preference.priority)).length > 0) {
            if (!(await beat())) return;
            continue;
          }
        }
        // With a priority, the wait is one heartbeat at a time, to look at the candidates again.
        lease = await client.acquire(resource, {
          signal: stopped.signal,
          waitMs: preference ? client.heartbeatMs : Infinity,
        });
      } catch (error) {
        if (stopped.signal.aborted) return;
        if (preference && isUnavailable(error)) continue;
        // The store is unreachable: report it, and try again after a pause rather than give up.
        report(error);
        if (!(await pause())) return;
        continue;
      }
      current = lease;
      let reason: DemotedReason = 'lost';
      let failure: unknown;
      try {
        // Published under this term's token, tagged with it, so a reader never takes the last
        // term's value for this one's.
        if (published !== undefined) await lease.writeData(termData(lease.token, published));
        const outranked = preference ? yieldWhenOutranked(lease) : undefined;
        await options.onElected(lease);
        await new Promise<void>((resolve) => {
          if (lease.signal.aborted) resolve();
          else lease.signal.addEventListener('abort', () => resolve(), { once: true });
        });
        if (await outranked) reason = 'yielded';
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
    sleep(clock, Math.min(client.heartbeatMs, 1000), stopped.signal).then(
      () => true,
      () => false,
    );
  /** Waits one heartbeat; false when the election was stopped meanwhile. */
  const beat = (): Promise<boolean> =>
    sleep(clock, client.heartbeatMs, stopped.signal).then(
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
    leader: () => readLeader(options.store, resource, clock),
    async stop() {
      stopped.abort(
        new LeaseError(ErrorCode.CLIENT_CLOSED, `election ${JSON.stringify(options.name)} stopped`),
      );
      current?.revoke('the election was stopped');
      // The registration goes with the client: released, so the others stop deferring at once.
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

function isUnavailable(error: unknown): boolean {
  return error instanceof LeaseError && error.code === ErrorCode.LEASE_UNAVAILABLE;
}
