import { MAX_ACQUIRE_KEYS, sendScript, type RedisArg, type RedisClient } from './redis-driver.js';
import type { RedisKeys } from './redis-keys.js';
import { TRANSITIONS } from './redis-ops.js';

/**
 * One single-lease transition waiting for its turn; `onReply` gets what RELEASE would, for an
 * acquisition 0 or its token, expiresAt and data (null when none), and for a first-free one 0 or
 * the position (from 1) of the candidate granted, its token, expiresAt and data; `[null, position,
 * problem]` for an acquisition refused over a record leasehold does not write (see redis-record.ts).
 */
export interface Transition {
  readonly kind: 'acquire' | 'release' | 'first';
  /** The resource, or a first-free acquisition's first candidate (all of them on one shard). */
  readonly resource: string;
  /** A first-free acquisition's candidates, in the order tried (`resource` alone when absent). */
  readonly candidates?: readonly string[];
  readonly owner: string;
  /** ttlMs for an acquisition, the token (as text) for a release. */
  readonly detail: RedisArg;
  readonly onReply: (value: unknown) => void;
  readonly onError: (error: unknown) => void;
}

/**
 * Group commit for single-lease transitions. While the store has a script call on the wire, the
 * acquisitions and releases asked for meanwhile wait for the next turn of the event loop (callers
 * answered by one read of the socket ask again in the same turn) and then go as one TRANSITIONS
 * call per shard, each applied exactly as its own script would be, in the order asked. A store
 * with nothing on the wire sends at once, so a lone caller pays nothing for this. Many callers on
 * one connection then cost the server one script call per turn instead of one per transition.
 */
export class Coalescer {
  private queue: Transition[] = [];
  private scheduled = false;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    /** Told when a call goes on the wire and when it comes back. */
    private readonly onWire: (delta: 1 | -1) => void,
  ) {}

  push(transition: Transition): void {
    this.queue.push(transition);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const queue = this.queue;
    this.queue = [];
    const groups = new Map<number, Transition[]>();
    for (const t of queue) {
      const shard = this.keys.shardOf(t.resource);
      const group = groups.get(shard);
      if (group) group.push(t);
      else groups.set(shard, [t]);
    }
    for (const [shard, group] of groups) {
      // At most MAX_ACQUIRE_KEYS records per call (a first-free acquisition counts its candidates).
      let start = 0;
      let keys = 0;
      group.forEach((t, i) => {
        const size = t.kind === 'first' ? (t.candidates?.length ?? 1) : 1;
        if (keys + size > MAX_ACQUIRE_KEYS && i > start) {
          this.send(shard, group.slice(start, i));
          start = i;
          keys = 0;
        }
        keys += size;
      });
      this.send(shard, group.slice(start));
    }
  }

  private send(shard: number, group: Transition[]): void {
    const recordPrefix = this.keys.recordPrefix(shard);
    const keys = [this.keys.index(shard)];
    const args: RedisArg[] = [this.keys.channel, Buffer.byteLength(recordPrefix)];
    for (const t of group) {
      if (t.kind === 'first') {
        const candidates = t.candidates ?? [t.resource];
        for (const candidate of candidates) keys.push(recordPrefix + candidate);
        args.push('f', t.owner, t.detail, candidates.length);
      } else {
        keys.push(recordPrefix + t.resource);
        args.push(t.kind === 'acquire' ? 'a' : 'r', t.owner, t.detail);
      }
    }
    this.onWire(1);
    sendScript(
      this.client,
      TRANSITIONS,
      keys,
      args,
      (value) => {
        this.onWire(-1);
        const reply = value as (string | number | null)[];
        let at = 0;
        for (const t of group) {
          if (t.kind === 'release') {
            t.onReply(reply[at]);
          } else if (t.kind === 'acquire') {
            const token = Number(reply[at]);
            // -1: the record is not one leasehold writes; handed on as ACQUIRE refuses it
            if (token === -1) t.onReply([null, 1, reply[at + 1]]);
            else t.onReply(token === 0 ? 0 : [reply[at], reply[at + 1], reply[at + 2]]);
          } else {
            const position = Number(reply[at++]);
            if (Number(reply[at]) === -1) t.onReply([null, position, reply[at + 1]]);
            else
              t.onReply(position === 0 ? 0 : [position, reply[at], reply[at + 1], reply[at + 2]]);
          }
          at += 3;
        }
      },
      (error) => {
        this.onWire(-1);
        for (const t of group) t.onError(error);
      },
    );
  }
}
