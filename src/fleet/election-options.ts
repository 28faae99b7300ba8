import { optionKeys } from '../core/options.js';
import type { LeaseData } from '../core/lease.js';
import type { LeaseStore } from '../core/store.js';
import type { Clock } from '../core/time.js';
import type { HeldLease } from '../client/held-lease.js';

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

export const ELECT_KEYS = optionKeys<ElectOptions>({
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
