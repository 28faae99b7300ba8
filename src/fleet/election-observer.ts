import { invalidArgument } from '../core/errors.js';
import { describe } from '../core/options.js';
import { sameData } from '../core/lease-data.js';
import type { LeaseStore, WatchListener } from '../core/store.js';
import { systemClock, type Clock } from '../core/time.js';
import {
  checkElectionName,
  readLeader,
  RESOURCE_PREFIX,
  type LeaderInfo,
} from './election-record.js';

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
