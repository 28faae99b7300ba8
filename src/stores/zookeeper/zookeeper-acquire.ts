import type { LeaseRecord } from '../../core/lease.js';
import { withData, type LeaseData } from '../../core/lease-data.js';
import type { AcquireOutcome } from '../../core/store.js';
import { ZK_CODE, type ZkStat } from './zookeeper-driver.js';
import type { ZkGrants } from './zookeeper-grants.js';
import {
  acquireOps,
  firstAcquireOps,
  opBytesOf,
  splitForMulti,
  takeoverOps,
  type Modes,
} from './zookeeper-ops.js';
import { decodeZkData, grantOf, hasDataOf, mtimeOf, recordOf } from './zookeeper-record.js';
import { noTokenZnode, refusedAcquire } from './zookeeper-errors.js';
import type { ResourcePaths } from './zookeeper-paths.js';
import type { MultiOutcome, ZkSession } from './zookeeper-session.js';

/** What `inspect` found behind a hold znode that stood in the way. */
type Seen =
  | { readonly kind: 'gone' }
  | { readonly kind: 'live'; readonly holder: LeaseRecord }
  | { readonly kind: 'lapsed'; readonly recordVersion: number };

/** How many times one acquire goes round when the resource keeps changing under it. */
const ATTEMPTS = 3;

/** The smallest batch whose acquire may list the records znode first (see `ZkAcquirer.states`). */
const LISTING_MIN = 64;

/** Records per member of a batch beyond which listing them all costs more than reading each. */
const LISTING_PER_MEMBER = 16;

/** The znode a path is a child of. */
function parentOf(path: string): string {
  return path.slice(0, path.lastIndexOf('/'));
}

/**
 * The acquire paths, on the session that holds leases of the TTL asked for (see `ZkSessions`).
 * Expiry is judged on the leader's clock: a lease is lapsed once the `mtime` of a write this
 * session just made (the clock znode) is past the record's `mtime` plus its TTL plus
 * `maxClockSkewMs`, and the take-over is conditioned on the record's version, so a renewal that
 * slipped in between wins.
 */
export class ZkAcquirer {
  constructor(
    private readonly clockPath: string,
    private readonly modes: Modes,
    private readonly maxClockSkewMs: number,
    private readonly grants: ZkGrants,
  ) {}

  /**
   * One `multi` when the resource is free (two on its very first acquire); when a hold stands in
   * the way, one clock probe with the resource's reads sent alongside, then a take-over `multi` if
   * the lease lapsed.
   */
  async one(
    s: ZkSession,
    p: ResourcePaths,
    owner: string,
    ttlMs: number,
    hint: 'free' | 'fresh' | 'held' = 'free',
  ): Promise<AcquireOutcome> {
    let path = hint;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const since = performance.now();
      if (path === 'free') {
        const r = await s.multi((tx) => acquireOps(tx, p, owner, ttlMs, this.modes));
        if (r.ok) return this.granted(s, p, owner, ttlMs, since, grantOf(p, r.results, 1, ttlMs));
        path = nextPath(p, r, 'free');
        continue;
      }
      if (path === 'fresh') {
        const r = await s.multi((tx) => firstAcquireOps(tx, p, owner, ttlMs, this.modes));
        if (r.ok) return this.granted(s, p, owner, ttlMs, since, grantOf(p, r.results, 2, ttlMs));
        path = nextPath(p, r, 'fresh');
        continue;
      }
      const [seen] = await this.inspect(s, [p]);
      if (seen!.kind === 'live') return { resource: p.resource, lease: null, holder: seen!.holder };
      if (seen!.kind === 'gone') {
        path = 'free';
        continue;
      }
      const version = seen!.recordVersion;
      const r = await s.multi((tx) => takeoverOps(tx, p, version, owner, ttlMs, this.modes));
      if (r.ok) return this.granted(s, p, owner, ttlMs, since, grantOf(p, r.results, 3, ttlMs));
      path = 'held'; // renewed, released or taken meanwhile: look again
    }
    return { resource: p.resource, lease: null };
  }

  /**
   * A batch: one round of reads tells free, never-acquired and held resources apart; the free
   * and new ones are granted in `multi`s of up to 256 KB (sent together), the held ones are
   * inspected with one clock probe. A `multi` refused as a whole (a resource changed between the
   * reads and the write) falls back to one acquire per resource of it.
   */
  async many(
    s: ZkSession,
    paths: readonly ResourcePaths[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    const out = new Array<AcquireOutcome>(paths.length);
    const states = await this.states(s, paths);
    const held: number[] = [];
    const writable: number[] = [];
    states.forEach(([, hold], i) => (hold ? held : writable).push(i));
    const fresh = (i: number): boolean => !states[i]![0];
    const sent: Promise<void>[] = [];
    for (const chunk of splitForMulti(writable, (i) => opBytesOf(paths[i]!, owner))) {
      sent.push(
        this.chunk(s, chunk, paths, owner, ttlMs, fresh).then((outcomes) =>
          chunk.forEach((i, k) => (out[i] = outcomes[k]!)),
        ),
      );
    }
    if (held.length > 0) {
      sent.push(
        this.inspect(
          s,
          held.map((i) => paths[i]!),
        ).then((seen) =>
          Promise.all(
            held.map(async (i, k) => {
              const found = seen[k]!;
              out[i] =
                found.kind === 'live'
                  ? { resource: paths[i]!.resource, lease: null, holder: found.holder }
                  : await this.one(
                      s,
                      paths[i]!,
                      owner,
                      ttlMs,
                      found.kind === 'gone' ? 'free' : 'held',
                    );
            }),
          ).then(() => {}),
        ),
      );
    }
    const settled = await Promise.allSettled(sent);
    const failed = settled.find((x) => x.status === 'rejected');
    if (failed) throw failed.reason;
    return out;
  }

  /**
   * Whether each resource's record and hold exist. For a batch of `LISTING_MIN` or more whose
   * namespace holds at most `LISTING_PER_MEMBER` records per member, one listing of the records
   * znode (after one `exists` of it for its child count) first tells which records exist at all:
   * a resource without one needs no reads, its first acquire's `multi` creating it (or failing as
   * a whole when another did meanwhile, then tried alone). That spares a fleet's cold start two
   * reads per resource, and the driver an error object with a stack trace for each missing znode
   * they find (one manager taking 10,000 new resources used a third less CPU, measured). The
   * listing decides nothing: every write is still conditioned by its `multi`.
   */
  private async states(
    s: ZkSession,
    paths: readonly ResourcePaths[],
  ): Promise<(readonly [ZkStat | null, ZkStat | null])[]> {
    const read = (p: ResourcePaths): Promise<[ZkStat | null, ZkStat | null]> =>
      Promise.all([s.exists(p.record), s.exists(p.hold)]);
    if (paths.length < LISTING_MIN) return Promise.all(paths.map(read));
    const folder = parentOf(paths[0]!.record);
    const stat = await s.exists(folder);
    if (stat && stat.numChildren > paths.length * LISTING_PER_MEMBER) {
      return Promise.all(paths.map(read));
    }
    const names = new Set(stat ? ((await s.getChildren(folder)) ?? []) : []);
    return Promise.all(
      paths.map((p) =>
        names.has(p.record.slice(folder.length + 1))
          ? read(p)
          : Promise.resolve([null, null] as const),
      ),
    );
  }

  private async chunk(
    s: ZkSession,
    chunk: readonly number[],
    paths: readonly ResourcePaths[],
    owner: string,
    ttlMs: number,
    fresh: (i: number) => boolean,
  ): Promise<AcquireOutcome[]> {
    const since = performance.now();
    const tokenAt: number[] = [];
    const r = await s.multi((tx) => {
      let at = 0;
      for (const i of chunk) {
        const first = fresh(i);
        tokenAt.push(at + (first ? 2 : 1));
        at += first
          ? firstAcquireOps(tx, paths[i]!, owner, ttlMs, this.modes)
          : acquireOps(tx, paths[i]!, owner, ttlMs, this.modes);
      }
    });
    if (r.ok) {
      return Promise.all(
        chunk.map((i, k) =>
          this.granted(
            s,
            paths[i]!,
            owner,
            ttlMs,
            since,
            grantOf(paths[i]!, r.results, tokenAt[k]!, ttlMs),
          ),
        ),
      );
    }
    return Promise.all(
      chunk.map((i) => this.one(s, paths[i]!, owner, ttlMs, fresh(i) ? 'fresh' : 'free')),
    );
  }

  /**
   * One write to the clock znode (its `mtime` is the leader's time now), and the reads of each
   * resource sent right behind it on the same session, so they see at least what was committed
   * before the probe: for each, whether the lease that stood in the way is still live.
   */
  async inspect(s: ZkSession, paths: readonly ResourcePaths[]): Promise<Seen[]> {
    const probe = s.setData(this.clockPath, Buffer.alloc(0));
    const reads = paths.map((p) =>
      Promise.all([s.getData(p.record), s.exists(p.token), s.exists(p.hold)]),
    );
    const [stat, found] = await Promise.all([probe, Promise.all(reads)]);
    const now = mtimeOf(stat);
    return Promise.all(
      found.map(async ([record, token, hold], i): Promise<Seen> => {
        // The record is checked whether or not a hold stands on it: a corrupt one is never free.
        if (record && !token) throw noTokenZnode(paths[i]!);
        if (!record || !token) return { kind: 'gone' };
        const found = recordOf(paths[i]!, record, token);
        if (!hold || found.owner === '') return { kind: 'gone' };
        if (now > found.expiresAt + this.maxClockSkewMs) {
          return { kind: 'lapsed', recordVersion: record.stat.version };
        }
        // The holder's data, read only where its token znode shows some.
        if (!hasDataOf(token)) return { kind: 'live', holder: found };
        return { kind: 'live', holder: withData(found, await readData(s, paths[i]!)) };
      }),
    );
  }

  /**
   * A grant: remembered on the session that holds it, and with what its record was left. The lease
   * data is handed over by one read of the data znode, sent on the same session after the grant,
   * only when the token znode's stat in the grant's answer shows one: nothing but this grant's
   * holder (not yet answered) can write it after the grant, so the read finds what the grant
   * found.
   * @internal also used by the group and first-free forms (`ZkGroups`).
   */
  async granted(
    s: ZkSession,
    p: ResourcePaths,
    owner: string,
    ttlMs: number,
    since: number,
    grant: { token: number; expiresAt: number; recordVersion: number; hasData: boolean },
  ): Promise<AcquireOutcome> {
    const { token, expiresAt, recordVersion, hasData } = grant;
    s.track(p.hold, since + ttlMs);
    this.grants.note(p.hold, {
      owner,
      token,
      recordVersion,
      session: s,
      until: since + ttlMs,
      hasData,
    });
    const lease = { resource: p.resource, owner, ttlMs, token, expiresAt };
    return {
      resource: p.resource,
      lease: hasData ? withData(lease, await readData(s, p)) : lease,
    };
  }
}

/** The lease data of a resource: its data znode's, `null` when there is none. */
export async function readData(s: ZkSession, p: ResourcePaths): Promise<LeaseData | null> {
  const read = await s.getData(p.data);
  return read ? decodeZkData(read.data, p.data) : null;
}

/** Where an acquire goes after its `multi` was refused. */
function nextPath(
  p: ResourcePaths,
  r: Extract<MultiOutcome, { ok: false }>,
  from: 'free' | 'fresh',
): 'free' | 'fresh' | 'held' {
  if (from === 'free' && r.index === 0 && r.code === ZK_CODE.NODE_EXISTS) return 'held';
  if (from === 'free' && r.index === 0 && r.code === ZK_CODE.NO_NODE) return 'fresh';
  if (from === 'fresh' && r.index === 0 && r.code === ZK_CODE.NODE_EXISTS) return 'free';
  throw refusedAcquire(p, from === 'free', r.index, r.code);
}
