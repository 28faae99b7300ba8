import type { Lease } from '../../core/lease.js';
import { ZK_CODE, type ZkTransaction } from './zookeeper-driver.js';
import type { ZkAcquirer } from './zookeeper-acquire.js';
import { acquireOps, firstAcquireOps, takeoverOps, type Modes } from './zookeeper-ops.js';
import { decodeRecord, encodeRecord, grantOf, mtimeOf } from './zookeeper-record.js';
import { refusedAcquire } from './zookeeper-errors.js';
import type { ResourcePaths } from './zookeeper-paths.js';
import type { ZkSession } from './zookeeper-session.js';

/**
 * How a member's or candidate's acquire is written: `free` (no hold znode), `fresh` (never
 * acquired: no record znode), or a take-over of a lapsed lease at the record version judged lapsed.
 */
type Plan = 'free' | 'fresh' | { readonly lapsed: number };

/**
 * The refusals a change by someone else explains: a hold or record that now exists, a record
 * missing, a record rewritten since it was judged lapsed. Any other refusal is an error, as in
 * the single acquire.
 */
const CONFLICTS: ReadonlySet<number> = new Set([
  ZK_CODE.NODE_EXISTS,
  ZK_CODE.NO_NODE,
  ZK_CODE.BAD_VERSION,
]);

/** How many times a group is written at most when its members keep changing under it. */
const ATTEMPTS = 3;

/**
 * The largest group written as one `multi`, in bytes of its operations at most (ZooKeeper drops
 * the connection of a packet over `jute.maxbuffer`, 1 MB by default). Groups of names of common
 * length stay far below; a group of 100 names near 512 bytes that ZooKeeper needs escaped may not.
 */
export const GROUP_BYTES = 512 * 1024;

/** The bytes one member's operations take at most (the five of a first acquire or a take-over). */
export function memberBytes(p: ResourcePaths, owner: string, ttlMs: number): number {
  const record = encodeRecord(owner, ttlMs).length;
  return 5 * (Buffer.byteLength(p.hold, 'utf8') + 48) + 2 * record + Buffer.byteLength(owner);
}

/**
 * All-or-nothing groups and first-free picks as ZooKeeper `multi`s, with the same znodes, expiry
 * judgement and grant bookkeeping as the single acquire (`ZkAcquirer`): a hold znode that exists
 * is lapsed only when the `mtime` of a write of this session to the clock znode is past the
 * record's `mtime` plus its TTL plus `maxClockSkewMs`, and its take-over is conditioned on the
 * record's version. A `multi` is all or nothing, so a refused group writes nothing.
 */
export class ZkGroups {
  constructor(
    private readonly acquirer: ZkAcquirer,
    private readonly clockPath: string,
    private readonly modes: Modes,
    private readonly maxClockSkewMs: number,
  ) {}

  /**
   * Every member or none: one `multi` that creates every hold (each refused if it exists) when the
   * members were acquired before and are free. When it is refused, one look (a clock write and two
   * reads per member, sent together): a live member refuses the group; otherwise one `multi`
   * written by what the look found (never-acquired members created, lapsed ones taken over).
   */
  async all(
    s: ZkSession,
    paths: readonly ResourcePaths[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease[] | null> {
    let plans: Plan[] = paths.map(() => 'free');
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const leases = await this.write(s, paths, plans, owner, ttlMs);
      if (Array.isArray(leases)) return leases;
      const looks = await this.look(s, paths);
      if (looks.includes('live')) return null;
      plans = looks as Plan[];
    }
    return null;
  }

  /**
   * The first free candidate: one `multi` for the first one (two if it was never acquired, as a
   * single acquire); when it is held, one look at every candidate, then one `multi` for each
   * candidate, in order, that the look found free or lapsed, until one is granted.
   */
  async first(
    s: ZkSession,
    paths: readonly ResourcePaths[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    const head = paths.slice(0, 1);
    const tried = await this.write(s, head, ['free'], owner, ttlMs);
    if (Array.isArray(tried)) return tried[0]!;
    if (tried.index === 0 && tried.code === ZK_CODE.NO_NODE) {
      const fresh = await this.write(s, head, ['fresh'], owner, ttlMs);
      if (Array.isArray(fresh)) return fresh[0]!;
    }
    const looks = await this.look(s, paths);
    for (let i = 0; i < paths.length; i++) {
      const plan = looks[i]!;
      if (plan === 'live') continue;
      const leases = await this.write(s, [paths[i]!], [plan], owner, ttlMs);
      if (Array.isArray(leases)) return leases[0]!;
    }
    return null;
  }

  /**
   * One `multi` acquiring each of `paths` by its plan: the leases, or where it was refused (the
   * index of the first operation that failed, and its code).
   */
  private async write(
    s: ZkSession,
    paths: readonly ResourcePaths[],
    plans: readonly Plan[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease[] | { index: number; code: number }> {
    const since = performance.now();
    const starts: number[] = [];
    const r = await s.multi((tx) => {
      let at = 0;
      paths.forEach((p, i) => {
        starts.push(at);
        at += this.ops(tx, p, plans[i]!, owner, ttlMs);
      });
    });
    if (!r.ok) {
      if (CONFLICTS.has(r.code)) return { index: r.index, code: r.code };
      const member = Math.max(
        0,
        starts.findLastIndex((start) => start <= r.index),
      );
      const plan = plans[member]!;
      throw refusedAcquire(paths[member]!, plan === 'free', r.index - starts[member]!, r.code);
    }
    const tokenAt = starts.map((start, i) => {
      const plan = plans[i]!;
      return start + (plan === 'free' ? 1 : plan === 'fresh' ? 2 : 3);
    });
    return Promise.all(
      paths.map(async (p, i) => {
        const grant = grantOf(p, r.results, tokenAt[i]!, ttlMs);
        return (await this.acquirer.granted(s, p, owner, ttlMs, since, grant)).lease!;
      }),
    );
  }

  private ops(tx: ZkTransaction, p: ResourcePaths, plan: Plan, o: string, ttl: number): number {
    if (plan === 'free') return acquireOps(tx, p, o, ttl, this.modes);
    if (plan === 'fresh') return firstAcquireOps(tx, p, o, ttl, this.modes);
    return takeoverOps(tx, p, plan.lapsed, o, ttl, this.modes);
  }

  /**
   * One write to the clock znode (its `mtime` is the leader's time now) and, right behind it on
   * the same session, each resource's record and hold, so the reads see at least what was
   * committed before the probe: how each one can be acquired, or `live`.
   */
  private async look(s: ZkSession, paths: readonly ResourcePaths[]): Promise<(Plan | 'live')[]> {
    const probe = s.setData(this.clockPath, Buffer.alloc(0));
    const reads = paths.map((p) => Promise.all([s.getData(p.record), s.exists(p.hold)]));
    const [stat, found] = await Promise.all([probe, Promise.all(reads)]);
    const now = mtimeOf(stat);
    return found.map(([record, hold], i): Plan | 'live' => {
      if (!record) return 'fresh'; // the hold is the record's child: no record, no hold
      // Checked whether or not a hold stands on it: a corrupt record is never free.
      const { o, t } = decodeRecord(paths[i]!.resource, record.data);
      if (!hold || o === '') return 'free';
      if (now > mtimeOf(record.stat) + t + this.maxClockSkewMs) {
        return { lapsed: record.stat.version };
      }
      return 'live';
    });
  }
}
