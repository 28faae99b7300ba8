import { GroupCommit, nextTurn, type GroupReply } from '../../core/group-commit.js';
import { MAX_ACQUIRE_KEYS, sendScript, type RedisArg, type RedisClient } from './redis-driver.js';
import type { RedisKeys } from './redis-keys.js';
import { TRANSITIONS } from './redis-ops.js';

/**
 * One single-lease transition waiting for its turn; its answer is what RELEASE would give, for an
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
  private readonly group: GroupCommit<Transition, unknown>;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    /** Told when a call goes on the wire and when it comes back. */
    private readonly onWire: (delta: 1 | -1) => void,
  ) {
    this.group = new GroupCommit({
      schedule: nextTurn,
      keying: { mode: 'apart', keyOf: (t) => this.keys.shardOf(t.resource) },
      // At most MAX_ACQUIRE_KEYS records per call (a first-free acquisition counts its candidates).
      limit: {
        size: (t) => (t.kind === 'first' ? (t.candidates?.length ?? 1) : 1),
        fits: (_count, keys) => keys <= MAX_ACQUIRE_KEYS,
      },
      send: (group, reply) => this.send(group, reply),
    });
  }

  /** Sends `transition` with the others asked meanwhile; `onReply` gets its part of the reply. */
  push(
    transition: Transition,
    onReply: (value: unknown) => void,
    onError: (error: unknown) => void,
  ): void {
    this.group.add(transition, onReply, onError);
  }

  private send(group: readonly Transition[], reply: GroupReply<unknown>): void {
    const shard = this.keys.shardOf(group[0]!.resource);
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
        reply.answer(partsOf(group, value as (string | number | null)[]));
      },
      (error) => {
        this.onWire(-1);
        reply.fail(error);
      },
    );
  }
}

/** Each transition's part of a TRANSITIONS reply, in the form its own script would answer. */
function partsOf(group: readonly Transition[], reply: (string | number | null)[]): unknown[] {
  let at = 0;
  return group.map((t) => {
    let part: unknown;
    if (t.kind === 'release') {
      part = reply[at];
    } else if (t.kind === 'acquire') {
      const token = Number(reply[at]);
      // -1: the record is not one leasehold writes; handed on as ACQUIRE refuses it
      if (token === -1) part = [null, 1, reply[at + 1]];
      else part = token === 0 ? 0 : [reply[at], reply[at + 1], reply[at + 2]];
    } else {
      const position = Number(reply[at++]);
      if (Number(reply[at]) === -1) part = [null, position, reply[at + 1]];
      else part = position === 0 ? 0 : [position, reply[at], reply[at + 1], reply[at + 2]];
    }
    at += 3;
    return part;
  });
}
