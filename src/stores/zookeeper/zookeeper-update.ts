import type { Lease, LeaseRef } from '../../core/lease.js';
import { withData, type LeaseData } from '../../core/lease-data.js';
import { yieldToLoop } from '../../core/time.js';
import type { ZkOpResult, ZkStat, ZkTransaction } from './zookeeper-driver.js';
import type { ZkGrants } from './zookeeper-grants.js';
import {
  dataOps,
  opBytesOf,
  releaseOps,
  renewOps,
  splitForMulti,
  writeDataOps,
} from './zookeeper-ops.js';
import { hasDataOf, mtimeOf, recordOf } from './zookeeper-record.js';
import { noTokenZnode, refusalOf } from './zookeeper-errors.js';
import type { ResourcePaths } from './zookeeper-paths.js';
import type { ZkSession } from './zookeeper-session.js';
import type { ZkSessions } from './zookeeper-sessions.js';

/**
 * How many times one renewal or release is written at most: once as remembered or read, and again
 * after each refusal that showed its record rewritten meanwhile (see `ZkUpdates.readAgain`).
 */
const MAX_ATTEMPTS = 8;

/** A lease of a batch and its znodes. */
export interface Item<T extends LeaseRef> {
  readonly index: number;
  readonly lease: T;
  readonly paths: ResourcePaths;
  /** Lease data to write in the same `multi` (`null` clears it); absent: the data is left alone. */
  readonly data?: LeaseData | null;
}

/** What a lease's write is conditioned on, when the lease is still the caller's as far as known. */
interface Basis {
  readonly recordVersion: number;
  /** The store's usable session that holds the hold znode, if it is one of the store's. */
  readonly holder: ZkSession | undefined;
  /** Whether the record has a data znode (read, or as this store's last write left it). */
  readonly hasData: boolean;
}

/** How one lease's operations went in a `multi`: applied, or refused at an operation of its own. */
type Sent =
  | { readonly ok: true; readonly results: readonly ZkOpResult[]; readonly first: number }
  | { readonly ok: false; readonly op: number; readonly code: number };

/**
 * Renew and release, in rounds where each resource appears at most once, on one session. A lease
 * this store granted or last renewed is written in one `multi` conditioned on what the store
 * remembers (see `ZkGrants`); any other is read first (its record, token and hold znodes, sent
 * together) and the `multi` is conditioned on what was read. A lease whose `multi` is refused
 * without the grant being over (its record was written since: by a grant, a release, or another
 * renewal of the same lease) goes round again with reads, so the answer is always the one the
 * reads would give.
 */
export class ZkUpdates {
  constructor(
    private readonly sessions: ZkSessions,
    private readonly grants: ZkGrants,
    private readonly ephemeral: number,
    private readonly persistent: number,
  ) {}

  /**
   * Writes each record again with its TTL, moving the hold onto `s` when the session that holds
   * it is not one of the store's with a timeout long enough for the new TTL. Sets `out[index]`.
   */
  async renew(
    s: ZkSession,
    round: readonly Item<Lease>[],
    ttlOf: (lease: Lease) => number,
    out: (Lease | null)[],
    attempt = 0,
  ): Promise<void> {
    const since = performance.now();
    const bases = await this.bases(s, round, attempt === 0);
    const live = round.filter((item) => bases.has(item.index));
    const moves = new Set<number>();
    for (const { index, lease } of live) {
      const holder = bases.get(index)!.holder;
      if (!holder || holder.timeoutMs < ttlOf(lease)) moves.add(index);
    }
    const sent = await sendBatched(s, live, (tx, { index, lease, paths, data }) => {
      const basis = bases.get(index)!;
      const ops = renewOps(
        tx,
        paths,
        basis.recordVersion,
        lease.owner,
        ttlOf(lease),
        moves.has(index) ? { ephemeral: this.ephemeral } : undefined,
      );
      if (data === undefined) return ops;
      return ops + dataOps(tx, paths, data, basis.hasData, this.persistent);
    });
    const again: Item<Lease>[] = [];
    for (const item of live) {
      const { index, lease, paths, data } = item;
      const r = sent.get(index)!;
      if (!r.ok) {
        if (this.readAgain(item, r, attempt)) again.push(item);
        continue;
      }
      const stat = r.results[r.first + (moves.has(index) ? 2 : 1)]?.stat;
      if (!stat) continue;
      const ttl = ttlOf(lease);
      const on = moves.has(index) ? s : bases.get(index)!.holder!;
      on.track(paths.hold, since + ttl);
      this.grants.note(paths.hold, {
        owner: lease.owner,
        token: lease.token,
        recordVersion: stat.version,
        session: on,
        until: since + ttl,
        hasData: data === undefined ? bases.get(index)!.hasData : data !== null,
      });
      // Without data, the data znode is neither read nor written: the lease keeps what it carried.
      out[index] = withData(
        {
          resource: lease.resource,
          owner: lease.owner,
          token: lease.token,
          expiresAt: mtimeOf(stat) + ttl,
          ttlMs: ttl,
        },
        data === undefined ? lease.data : data,
      );
    }
    if (again.length > 0) await this.renew(s, again, ttlOf, out, attempt + 1);
  }

  /** Deletes each hold and blanks its record. Sets `out[index]`. */
  async release(
    s: ZkSession,
    round: readonly Item<LeaseRef>[],
    out: boolean[],
    attempt = 0,
  ): Promise<void> {
    const bases = await this.bases(s, round, attempt === 0);
    const live = round.filter((item) => bases.has(item.index));
    const sent = await sendBatched(s, live, (tx, { index, paths, data }) => {
      const basis = bases.get(index)!;
      const ops = releaseOps(tx, paths, basis.recordVersion);
      if (data === undefined) return ops;
      return ops + dataOps(tx, paths, data, basis.hasData, this.persistent);
    });
    const again: Item<LeaseRef>[] = [];
    for (const item of live) {
      const r = sent.get(item.index)!;
      if (!r.ok) {
        if (this.readAgain(item, r, attempt)) again.push(item);
        continue;
      }
      this.sessions.untrack(item.paths.hold);
      this.grants.forget(item.paths.hold, item.lease.token);
      out[item.index] = true;
    }
    if (again.length > 0) await this.release(s, again, out, attempt + 1);
  }

  /**
   * Writes each lease's data (`item.data`) in one `multi` with renew's conditions as checks, the
   * record left as it is. Sets `out[index]`.
   */
  async writeData(
    s: ZkSession,
    round: readonly Item<LeaseRef>[],
    out: boolean[],
    attempt = 0,
  ): Promise<void> {
    const bases = await this.bases(s, round, attempt === 0);
    const live = round.filter((item) => bases.has(item.index));
    const sent = await sendBatched(s, live, (tx, { index, paths, data }) => {
      const basis = bases.get(index)!;
      return writeDataOps(
        tx,
        paths,
        basis.recordVersion,
        data ?? null,
        basis.hasData,
        this.persistent,
      );
    });
    const again: Item<LeaseRef>[] = [];
    for (const item of live) {
      const r = sent.get(item.index)!;
      if (!r.ok) {
        if (this.readAgain(item, r, attempt)) again.push(item);
        continue;
      }
      this.grants.noteData(item.paths.hold, item.lease, (item.data ?? null) !== null);
      out[item.index] = true;
    }
    if (again.length > 0) await this.writeData(s, again, out, attempt + 1);
  }

  /**
   * Whether a refused lease is to be read and tried again: one whose grant the refusal does not
   * show to be over. Its record was written since what the write was conditioned on (remembered,
   * or read): by a grant or a release, which the next read finds, or by another renewal of the
   * same lease (this store's or another process's), after which the lease is still the caller's
   * and must be renewed or released, not answered as lost. Each round lands one of the writes
   * that raced, so the rounds end; `MAX_ATTEMPTS` only bounds a record rewritten without pause.
   * A grant shown over is forgotten.
   */
  private readAgain(
    { lease, paths }: Item<LeaseRef>,
    refused: Extract<Sent, { ok: false }>,
    attempt: number,
  ): boolean {
    if (refusalOf(refused.op, refused.code) === 'changed' && attempt + 1 < MAX_ATTEMPTS)
      return true;
    this.grants.forget(paths.hold, lease.token);
    return false;
  }

  /** What each lease's write is conditioned on: remembered, or read; absent when not held. */
  private async bases<T extends LeaseRef>(
    s: ZkSession,
    round: readonly Item<T>[],
    remembered: boolean,
  ): Promise<Map<number, Basis>> {
    const out = new Map<number, Basis>();
    const unknown: Item<T>[] = [];
    for (const item of round) {
      const known = remembered ? this.grants.of(item.paths.hold, item.lease) : undefined;
      if (!known) {
        unknown.push(item);
        continue;
      }
      out.set(item.index, {
        recordVersion: known.recordVersion,
        holder: known.session.usable ? known.session : undefined,
        hasData: known.hasData ?? false,
      });
    }
    if (unknown.length === 0) return out;
    const found = await stillHeld(s, unknown);
    unknown.forEach((item, k) => {
      const f = found[k];
      if (!f) {
        // Read and not held: a grant remembered for this very lease is over (it was taken over).
        if (this.grants.of(item.paths.hold, item.lease)) {
          this.grants.forget(item.paths.hold, item.lease.token);
        }
        return;
      }
      out.set(item.index, {
        recordVersion: f.recordVersion,
        holder: this.sessions.byOwner(f.hold.ephemeralOwner),
        hasData: f.hasData,
      });
    });
    return out;
  }
}

/**
 * Reads each lease's record, token and hold znodes (sent together on `s`) and keeps those still
 * held by their owner with their token: the hold exists, the token znode is at the lease's token
 * (no grant since), and the record names the owner.
 */
async function stillHeld<T extends LeaseRef>(
  s: ZkSession,
  items: readonly Item<T>[],
): Promise<({ recordVersion: number; hold: ZkStat; hasData: boolean } | undefined)[]> {
  const reads = await Promise.all(
    items.map(({ paths }) =>
      Promise.all([s.getData(paths.record), s.exists(paths.token), s.exists(paths.hold)]),
    ),
  );
  return reads.map(([record, token, hold], k) => {
    const { lease, paths } = items[k]!;
    // A record made corrupt is RECORD_INVALID (the batch fails as a whole), never renewed over.
    if (record && !token) throw noTokenZnode(paths);
    if (!record || !token) return undefined;
    const found = recordOf(paths, record, token);
    if (!hold) return undefined;
    if (found.owner !== lease.owner || found.token !== lease.token) return undefined;
    return { recordVersion: record.stat.version, hold, hasData: hasDataOf(token) };
  });
}

/**
 * Sends the operations of `items` in `multi`s of up to 256 KB (all in flight at once, each sent in
 * its own turn of the event loop). A `multi` is all
 * or nothing, and tells only the first operation that failed: that lease is answered with its
 * refusal, and the rest of its `multi` is sent again without it (a lease changed since its write
 * was prepared, which is rare). `ops` adds one lease's operations and says how many.
 */
async function sendBatched<T extends LeaseRef>(
  s: ZkSession,
  items: readonly Item<T>[],
  ops: (tx: ZkTransaction, item: Item<T>) => number,
): Promise<Map<number, Sent>> {
  const out = new Map<number, Sent>();
  const send = async (group: readonly Item<T>[]): Promise<void> => {
    let rest = group;
    while (rest.length > 0) {
      const starts: number[] = [];
      const r = await s.multi((tx) => {
        let at = 0;
        for (const item of rest) {
          starts.push(at);
          at += ops(tx, item);
        }
      });
      if (r.ok) {
        rest.forEach((item, k) =>
          out.set(item.index, { ok: true, results: r.results, first: starts[k]! }),
        );
        return;
      }
      let culprit = starts.findIndex(
        (start, k) => r.index < (starts[k + 1] ?? Infinity) && r.index >= start,
      );
      if (culprit < 0) culprit = 0;
      out.set(rest[culprit]!.index, { ok: false, op: r.index - starts[culprit]!, code: r.code });
      rest = rest.filter((_, k) => k !== culprit);
    }
  };
  const groups = splitForMulti(items, (item) => opBytesOf(item.paths, item.lease.owner));
  if (groups.length === 1) {
    await send(groups[0]!);
    return out;
  }
  // The driver encodes a `multi` when it is sent: one per turn of the event loop, not all in one.
  const sending: Promise<void>[] = [];
  for (const group of groups) {
    if (sending.length > 0) await yieldToLoop();
    const sent = send(group);
    sent.catch(() => {}); // awaited below; not an unhandled rejection while later ones are sent
    sending.push(sent);
  }
  await Promise.all(sending);
  return out;
}

/** Items in rounds where each resource appears at most once, in input order. */
export function rounds<T extends { readonly paths: ResourcePaths }>(items: readonly T[]): T[][] {
  const seen = new Map<string, number>();
  const out: T[][] = [];
  for (const item of items) {
    const round = seen.get(item.paths.record) ?? 0;
    seen.set(item.paths.record, round + 1);
    (out[round] ??= []).push(item);
  }
  return out;
}
