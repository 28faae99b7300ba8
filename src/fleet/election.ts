import { ErrorCode, invalidArgument, LeaseError } from '../core/errors.js';
import {
  checkInteger,
  checkKnownKeys,
  checkResource,
  describe,
  LIMITS,
  optionKeys,
} from '../core/options.js';
import { isLive, type LeaseData } from '../core/lease.js';
import { checkData, sameData } from '../core/lease-data.js';
import { CANDIDATE_MARK } from '../core/record-marks.js';
import type { LeaseStore, WatchListener } from '../core/store.js';
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
  /**
   * Called when leadership ends: `'lost'` (the lease was lost), `'stopped'` (stop() was called),
   * `'failed'` (onElected threw) or `'yielded'` (a candidate of higher `priority` took over).
   */
  onDemoted?: (reason: DemotedReason, error?: unknown) => void;
  /** Told of store errors while campaigning (the campaign goes on after a pause). @default process.emitWarning */
  onError?: (error: unknown) => void;
  /** Where time comes from; inject a `ManualClock` in tests. @default the system clock */
  clock?: Clock;
  /**
   * What this candidate publishes with its term once elected (its address, say): written as the
   * lease's data under the term's token before `onElected` runs, read by `leader()` and
   * `observeLeader`. Needs a store with `capabilities.data`.
   */
  data?: LeaseData;
  /**
   * This candidate's priority (any finite number; higher is preferred). While it campaigns it
   * keeps a registration of its own (a lease on `election/<name>\u0001candidate=<priority>:<owner>`);
   * a leader with a priority lists the registrations every heartbeat and, once a candidate of
   * higher priority has been campaigning for `holdOffMs` on one registration, steps down for it
   * (releases the lease: one handoff, no gap beyond it), and a waiting candidate does not take the
   * lease while a live candidate of higher priority waits too. Equal priorities never preempt
   * each other. A candidate without a priority neither registers nor ever steps down: give every
   * candidate of an election one. Preference is advice: who holds is still the lease's
   * compare-and-set, so at most one candidate is leader whatever the registrations say.
   */
  priority?: number;
  /**
   * How long, in ms, a candidate of higher priority must have been seen campaigning (on one
   * registration, by the leader's own clock) before the leader steps down for it: a preferred
   * candidate that crash-loops faster than this never takes leadership from a running leader, and
   * leadership changes hands for it at most once per `holdOffMs` of its uptime.
   * @default 2 × ttlMs
   */
  holdOffMs?: number;
}

/** Why a term ended (see `ElectOptions.onDemoted`). */
export type DemotedReason = 'lost' | 'stopped' | 'failed' | 'yielded';

/** Who leads an election now, as the store has it. */
export interface LeaderInfo {
  /** The leader's owner id. */
  readonly owner: string;
  /** The term's fencing token: rises with every new term. */
  readonly token: number;
  /** What the leader published for this term (`ElectOptions.data`); `null` until it has. */
  readonly data: LeaseData | null;
  /** When the term lapses unless renewed, on the store's time. */
  readonly expiresAt: number;
}

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
  data: true,
  priority: true,
  holdOffMs: true,
});

export { CANDIDATE_MARK };

/**
 * The priority a registration's name gives after `CANDIDATE_MARK` (`<priority>:<owner>`), or
 * `undefined` when the rest is not one.
 */
export function registrationPriority(rest: string): number | undefined {
  const colon = rest.indexOf(':');
  const priority = colon < 0 ? NaN : Number(rest.slice(0, colon));
  return Number.isFinite(priority) ? priority : undefined;
}

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

/** A candidate's priority, hold-off and registration, checked; `undefined` without a priority. */
function checkPreference(
  options: ElectOptions,
  resource: string,
  client: LeaseClient,
): { priority: number; holdOffMs: number; registration: string } | undefined {
  const { priority, holdOffMs } = options;
  if (priority === undefined) {
    if (holdOffMs !== undefined)
      throw invalidArgument('holdOffMs', 'needs priority: only a candidate with a priority yields');
    return undefined;
  }
  if (typeof priority !== 'number' || !Number.isFinite(priority))
    throw invalidArgument('priority', `must be a finite number, got ${describe(priority)}`);
  const holdOff = checkInteger(
    'holdOffMs',
    holdOffMs ?? 2 * client.ttlMs,
    0,
    Number.MAX_SAFE_INTEGER,
  );
  const registration = `${resource}${CANDIDATE_MARK}${String(priority)}:${client.owner}`;
  const bytes = Buffer.byteLength(registration, 'utf8');
  if (bytes > LIMITS.resourceMaxBytes)
    throw invalidArgument(
      'priority',
      `needs a registration "${RESOURCE_PREFIX}<name>\\u0001candidate=<priority>:<owner>" of at most ${LIMITS.resourceMaxBytes} UTF-8 bytes, got ${bytes}: use a shorter name or owner`,
    );
  return { priority, holdOffMs: holdOff, registration };
}

/** A live registration of a candidate of higher priority: `key` tells one registration from the next. */
interface CandidateSeen {
  readonly key: string;
}

/** The registrations of an election's candidates, as `list` shows them. */
class Candidates {
  private readonly prefix: string;

  constructor(
    private readonly store: LeaseStore,
    resource: string,
    private readonly owner: string,
    private readonly clock: Clock,
  ) {
    this.prefix = `${resource}${CANDIDATE_MARK}`;
  }

  /** The live registrations of other candidates with a priority above `priority`. */
  async above(priority: number): Promise<CandidateSeen[]> {
    const records = await this.store.list({ prefix: this.prefix, limit: LIMITS.listMaxLimit });
    const now = this.clock.now();
    const allowance = this.store.maxClockSkewMs + (this.store.expiryLagMs ?? 0);
    const out: CandidateSeen[] = [];
    for (const record of records) {
      if (record.owner === this.owner || !isLive(record, now, allowance)) continue;
      const theirs = registrationPriority(record.resource.slice(this.prefix.length));
      if (theirs !== undefined && theirs > priority)
        out.push({ key: `${record.resource}#${record.token}` });
    }
    return out;
  }
}

function isUnavailable(error: unknown): boolean {
  return error instanceof LeaseError && error.code === ErrorCode.LEASE_UNAVAILABLE;
}

/** The record's data for a term: the term's token and the candidate's value, as JSON text. */
function termData(token: number, data: LeaseData): string {
  return JSON.stringify(
    typeof data === 'string'
      ? { term: token, text: data }
      : { term: token, base64: Buffer.from(data).toString('base64') },
  );
}

/** The value published for term `token`, or `null` when the data is another term's (or none). */
function termValue(data: LeaseData | null | undefined, token: number): LeaseData | null {
  if (typeof data !== 'string') return null;
  try {
    const value = JSON.parse(data) as { term?: unknown; text?: unknown; base64?: unknown };
    if (value.term !== token) return null;
    if (typeof value.text === 'string') return value.text;
    if (typeof value.base64 === 'string')
      return new Uint8Array(Buffer.from(value.base64, 'base64'));
  } catch {
    // not an election's data
  }
  return null;
}

async function readLeader(
  store: LeaseStore,
  resource: string,
  clock: Clock,
): Promise<LeaderInfo | null> {
  const record = await store.get(resource);
  // A lapsed term has no leader, judged as a contender would (the store's allowance included).
  const allowance = store.maxClockSkewMs + (store.expiryLagMs ?? 0);
  if (!record || !isLive(record, clock.now(), allowance)) return null;
  return {
    owner: record.owner,
    token: record.token,
    data: termValue(record.data, record.token),
    expiresAt: record.expiresAt,
  };
}

/** What `observeLeader` is told, and how often it looks. */
export interface ObserveLeaderOptions {
  /** Called with the new leader (or `null`: none) each time the leader, its term or its data changes. */
  onChange: (leader: LeaderInfo | null) => void;
  /** How often, in ms, the record is read (besides the store's announcements). @default 1000 */
  pollMs?: number;
  /** Where time comes from. @default the system clock */
  clock?: Clock;
}

/** A running observation, as `observeLeader` returns it. */
export interface LeaderObserver {
  /** The leader as last read (`undefined` before the first read). */
  readonly current: LeaderInfo | null | undefined;
  /** Stops reading and listening. */
  stop(): void;
}

/**
 * Follows who leads election `name` without campaigning: reads the record now, on every release
 * or expiry the store announces (stores with `watch`), and every `pollMs`, and calls `onChange`
 * when the leader, its term or its published data changed. Store errors are retried at the next
 * look; the last answer stands meanwhile.
 */
export function observeLeader(
  store: LeaseStore,
  name: string,
  options: ObserveLeaderOptions,
): LeaderObserver {
  const resource = `${RESOURCE_PREFIX}${checkElectionName(name)}`;
  if (typeof options?.onChange !== 'function')
    throw invalidArgument('onChange', `must be a function, got ${describe(options?.onChange)}`);
  const pollMs = options.pollMs ?? 1000;
  if (!Number.isInteger(pollMs) || pollMs < 10)
    throw invalidArgument('pollMs', `must be an integer of at least 10, got ${describe(pollMs)}`);
  const clock = options.clock ?? systemClock;
  let current: LeaderInfo | null | undefined;
  let stopped = false;
  let reading = false;
  let again = false;
  const look = async (): Promise<void> => {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        const next = await readLeader(store, resource, clock).catch(() => current);
        if (stopped) return;
        if (next !== undefined && !sameLeader(current, next)) {
          current = next;
          options.onChange(next);
        }
      } while (again && !stopped);
    } finally {
      reading = false;
    }
  };
  const onEvent: WatchListener = (event) => {
    if (event.resource === resource) void look();
  };
  const unwatch =
    store.capabilities.watch && typeof store.watch === 'function'
      ? store.watch(resource, onEvent)
      : undefined;
  const timer = setInterval(() => void look(), pollMs);
  timer.unref();
  void look();
  return {
    get current() {
      return current;
    },
    stop() {
      stopped = true;
      clearInterval(timer);
      unwatch?.();
    },
  };
}

function sameLeader(a: LeaderInfo | null | undefined, b: LeaderInfo | null): boolean {
  if (a === undefined) return false;
  if (a === null || b === null) return a === b;
  return a.owner === b.owner && a.token === b.token && sameData(a.data, b.data);
}
