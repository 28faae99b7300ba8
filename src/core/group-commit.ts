import { ErrorCode, LeaseError } from './errors.js';

/**
 * When the calls gathered by a `GroupCommit` go: `thisTurn` once the microtasks already queued
 * have run (callers resumed by one event ask again before it drains), `nextTurn` in the next turn
 * of the event loop (callers answered by one read of a socket ask again in the same turn).
 */
export type Schedule = (flush: () => void) => void;

const SETTLED = Promise.resolve();

/** Flushes after the microtasks already queued: a settled promise's reaction, not `queueMicrotask` (which wraps each call for async hooks). */
export const thisTurn: Schedule = (flush) => {
  void SETTLED.then(flush);
};

/** Flushes in the next turn of the event loop (`setImmediate`). */
export const nextTurn: Schedule = (flush) => {
  setImmediate(flush);
};

/**
 * How the calls gathered in one flush are parted before `limit` cuts them into groups:
 * - `apart`: calls of different keys never share a group (one group per key, the keys in the order
 *   of their first call), as a Redis script reaches the keys of one shard only;
 * - `once`: a key at most once per group, the k-th call of a key in the k-th round of groups, as
 *   nested etcd transactions all read the keys as they were before the whole.
 */
export interface Keying<T> {
  readonly mode: 'apart' | 'once';
  readonly keyOf: (call: T) => unknown;
}

/** How much a group holds: a group takes calls while they fit, and always its first one. */
export interface GroupLimit<T> {
  /** What one call takes of a group's room (keys, operations, statements). */
  readonly size: (call: T) => number;
  /** Whether a group of `count` calls, whose sizes sum to `total` and are at most `largest`, fits. */
  readonly fits: (count: number, total: number, largest: number) => boolean;
}

/**
 * One member's own failure in a group's answer: that member fails with `error`, the others take
 * their answers (a statement refused alone inside a transaction that went on, a part missing from
 * a reply).
 */
export class MemberFailure {
  constructor(readonly error: unknown) {}
}

/**
 * A group's answer, one entry per member in order: the member's result, its `MemberFailure`, or a
 * promise of its result (a member sent once more on its own), the group staying in flight until
 * each such promise settles.
 */
export type GroupAnswer<R> = readonly (R | MemberFailure | Promise<R>)[];

/** How a sent group is settled: `answer` with one entry per member, or `fail` for them all. */
export interface GroupReply<R> {
  answer(results: GroupAnswer<R>): void;
  fail(error: unknown): void;
}

export interface GroupCommitOptions<T, R> {
  /** When the gathered calls go (see `Schedule`). */
  readonly schedule: Schedule;
  /** How they are parted by key (see `Keying`); without it they are parted by `limit` alone. */
  readonly keying?: Keying<T>;
  /** How much one group holds; without it, no limit. */
  readonly limit?: GroupLimit<T>;
  /**
   * Whether a call made while no group is in flight and none is gathering is sent at once, alone,
   * so that a lone caller waits for nothing. Otherwise every call waits for the flush.
   * @default false
   */
  readonly aloneWhenIdle?: boolean;
  /** Sends one group (calls in the order made) and settles it once, through `reply`. */
  readonly send: (calls: readonly T[], reply: GroupReply<R>) => void;
}

interface Member<T, R> {
  readonly call: T;
  readonly resolve: (result: R) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit: calls made close together are gathered and sent as few groups as `keying` and
 * `limit` allow, each group one round trip to the store, every caller answered with its own part
 * of its group's answer; a group's failure reaches exactly that group's callers. Calls are sent in
 * the order made (groups in the order of their first call); a flush while other groups are in
 * flight sends at once, without waiting for them.
 */
export class GroupCommit<T, R> {
  private queue: Member<T, R>[] = [];
  private scheduled = false;
  private flying = 0;

  constructor(private readonly options: GroupCommitOptions<T, R>) {}

  /** Groups sent and not yet settled. */
  get inFlight(): number {
    return this.flying;
  }

  /** Sends `call` with the others gathered; answers its part of its group's answer. */
  run(call: T): Promise<R> {
    return new Promise<R>((resolve, reject) => this.add(call, resolve, reject));
  }

  /** `run` with callbacks instead of a promise: one of them is called once. */
  add(call: T, resolve: (result: R) => void, reject: (error: unknown) => void): void {
    const member = { call, resolve, reject };
    if (this.options.aloneWhenIdle && this.flying === 0 && !this.scheduled) {
      this.send([member]);
      return;
    }
    this.queue.push(member);
    if (this.scheduled) return;
    this.scheduled = true;
    this.options.schedule(this.flush);
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const queue = this.queue;
    this.queue = [];
    for (const part of this.parts(queue)) this.cut(part);
  };

  /** `queue` parted by `keying`, each part in the order the calls were made. */
  private parts(queue: Member<T, R>[]): Member<T, R>[][] {
    const keying = this.options.keying;
    if (!keying) return [queue];
    if (keying.mode === 'apart') {
      const parts = new Map<unknown, Member<T, R>[]>();
      for (const member of queue) {
        const key = keying.keyOf(member.call);
        const part = parts.get(key);
        if (part) part.push(member);
        else parts.set(key, [member]);
      }
      return [...parts.values()];
    }
    const seen = new Map<unknown, number>();
    const rounds: Member<T, R>[][] = [];
    for (const member of queue) {
      const key = keying.keyOf(member.call);
      const round = seen.get(key) ?? 0;
      seen.set(key, round + 1);
      (rounds[round] ??= []).push(member);
    }
    return rounds;
  }

  /** Sends `part` as groups within `limit`. */
  private cut(part: Member<T, R>[]): void {
    const limit = this.options.limit;
    if (!limit) {
      this.send(part);
      return;
    }
    let start = 0;
    let total = 0;
    let largest = 0;
    part.forEach((member, i) => {
      const size = limit.size(member.call);
      if (i > start && !limit.fits(i - start + 1, total + size, Math.max(largest, size))) {
        this.send(part.slice(start, i));
        start = i;
        total = 0;
        largest = 0;
      }
      total += size;
      largest = Math.max(largest, size);
    });
    this.send(start === 0 ? part : part.slice(start));
  }

  private send(group: Member<T, R>[]): void {
    this.flying++;
    let settled = false;
    const reply: GroupReply<R> = {
      answer: (results) => {
        if (settled) return;
        if (results.length !== group.length) {
          // Never an answer made up for a caller: a reply that does not fit its group fails it.
          reply.fail(
            new LeaseError(
              ErrorCode.STORE_UNAVAILABLE,
              `a group of ${group.length} calls got ${results.length} answers`,
              { retryable: false },
            ),
          );
          return;
        }
        settled = true;
        let open = 1;
        const landed = (): void => {
          if (--open === 0) this.flying--;
        };
        group.forEach((member, k) => {
          const result = results[k];
          if (result instanceof Promise) {
            open++;
            result.then(
              (value: R) => {
                landed();
                member.resolve(value);
              },
              (error: unknown) => {
                landed();
                member.reject(error);
              },
            );
          } else if (result instanceof MemberFailure) member.reject(result.error);
          else member.resolve(result as R);
        });
        landed();
      },
      fail: (error) => {
        if (settled) return;
        settled = true;
        this.flying--;
        for (const member of group) member.reject(error);
      },
    };
    try {
      this.options.send(
        group.map((member) => member.call),
        reply,
      );
    } catch (error) {
      reply.fail(error); // a send that threw before going out fails its group, as its reply would
    }
  }
}
