import type { LeaseBatches } from '../../core/delegating-store.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import type { AcquireOutcome } from '../../core/store.js';
import { yieldToLoop } from '../../core/time.js';
import type { MysqlCalls } from './mysql-calls.js';
import { queryOptions as q } from './mysql-driver.js';
import { batchOutcome, bytes, int, toRecord, type Row } from './mysql-record.js';

/** One distinct (resource, owner, token) of a batch and where it appears in the caller's list. */
export interface BatchEntry<T extends LeaseRef> {
  readonly lease: T;
  readonly ttlMs: number;
  /** Input positions holding this lease, in order. */
  readonly positions: number[];
}

export interface Batch<T extends LeaseRef> {
  /** Distinct leases in resource byte order, so concurrent batches lock rows in one order. */
  readonly entries: BatchEntry<T>[];
  /** `[[hex resource, hex owner, token, ttl], …]` as UTF-8 bytes, row `i` (from 1) = `entries[i - 1]`. */
  readonly json: Buffer;
}

/**
 * Plans one batch statement. A lease listed twice is sent once: a renewal applies the TTL of its
 * last occurrence (as sequential renewals would leave it), and only its first release can succeed.
 */
export function planBatch<T extends LeaseRef>(
  leases: readonly T[],
  ttlOf: (lease: T) => number,
): Batch<T> {
  const byKey = new Map<string, BatchEntry<T> & { ttlMs: number; r: string; o: string }>();
  leases.forEach((lease, position) => {
    const r = Buffer.from(lease.resource, 'utf8').toString('hex');
    const o = Buffer.from(lease.owner, 'utf8').toString('hex');
    const key = `${r}:${o}:${lease.token}`;
    const found = byKey.get(key);
    if (found) {
      found.positions.push(position);
      found.ttlMs = ttlOf(lease);
    } else {
      byKey.set(key, { lease, ttlMs: ttlOf(lease), positions: [position], r, o });
    }
  });
  // Hex of UTF-8 compares like the bytes themselves.
  const entries = [...byKey.values()].sort((a, b) =>
    a.r < b.r ? -1 : a.r > b.r ? 1 : a.o < b.o ? -1 : a.o > b.o ? 1 : a.lease.token - b.lease.token,
  );
  const json = Buffer.from(
    JSON.stringify(entries.map((e) => [e.r, e.o, e.lease.token, e.ttlMs])),
    'utf8',
  );
  return { entries, json };
}

/**
 * An acquire batch: the names in byte order (the order rows are locked in) as a JSON array of
 * strings, in UTF-8 bytes. Not hex like the lease batches: the bytes travel as `X'…'`, twice
 * their size, and hex would double that again, past MariaDB's default 16 MB packet for the
 * largest batch (10,000 names of 512 bytes).
 */
export interface NameBatch {
  /** Input position of row `i` (from 1) at `positions[i - 1]`. */
  readonly positions: number[];
  readonly json: Buffer;
}

/** Plans one acquire batch over distinct names. */
export function planNames(resources: readonly string[]): NameBatch {
  const rows = resources.map((resource, position) => ({
    bytes: Buffer.from(resource, 'utf8'),
    resource,
    position,
  }));
  rows.sort((a, b) => Buffer.compare(a.bytes, b.bytes));
  return {
    positions: rows.map((row) => row.position),
    json: Buffer.from(JSON.stringify(rows.map((row) => row.resource)), 'utf8'),
  };
}

/**
 * The candidates of `acquireFirst` in byte order (the order rows are locked in), each with its
 * place in the caller's order: `[[name, position], …]` as UTF-8 bytes.
 */
export function planRanked(resources: readonly string[]): Buffer {
  const rows = resources.map((resource, position) => ({
    bytes: Buffer.from(resource, 'utf8'),
    resource,
    position,
  }));
  rows.sort((a, b) => Buffer.compare(a.bytes, b.bytes));
  return Buffer.from(JSON.stringify(rows.map((row) => [row.resource, row.position])), 'utf8');
}

/** The batches, each one round trip, and `list`, their answers decoded a slice per turn. */
export class MysqlBatch implements LeaseBatches {
  constructor(
    private readonly calls: MysqlCalls,
    /** The single renewal and release, for a batch of one. */
    private readonly single: {
      renew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null>;
      release(lease: LeaseRef): Promise<boolean>;
    },
  ) {}

  /** One round trip for the whole batch: the grants, and the live record behind each refusal. */
  async acquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    const batch = planNames(resources);
    const o = bytes(owner);
    const results = await this.calls
      .call((c) => c.query(q(this.calls.sql.acquireBatch), [batch.json, o, ttlMs, o, ttlMs]))
      .catch((error: unknown) => this.calls.refused(error, resources));
    const outcomes: AcquireOutcome[] = resources.map((resource) => ({ resource, lease: null }));
    const rows = (results as unknown[])[3] as (Omit<Row, 'resource'> & { i: unknown })[];
    await inTurns(rows, (row) => {
      const position = batch.positions[int(row.i, 'batch row') - 1]!;
      outcomes[position] = batchOutcome(resources[position]!, owner, ttlMs, row);
    });
    return outcomes;
  }

  async renewMany(leases: readonly Lease[], ttlMs: number | undefined): Promise<(Lease | null)[]> {
    if (leases.length === 1) return [await this.single.renew(leases[0]!, ttlMs)];
    const batch = planBatch(leases, (lease) => ttlMs ?? lease.ttlMs);
    const results = await this.calls.call((c) =>
      c.query(q(this.calls.sql.renewBatch), [batch.json]),
    );
    const out: (Lease | null)[] = leases.map(() => null);
    for (const row of (results as unknown[])[2] as { i: unknown; expiresAt: unknown }[]) {
      const entry = batch.entries[int(row.i, 'batch row') - 1]!;
      const renewed: Lease = {
        ...pick(entry.lease),
        expiresAt: int(row.expiresAt, 'expires_at'),
        ttlMs: entry.ttlMs,
      };
      for (const position of entry.positions) out[position] = renewed;
    }
    return out;
  }

  async releaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    if (leases.length === 1) return [await this.single.release(leases[0]!)];
    const batch = planBatch(leases, () => 0);
    const results = await this.calls.call((c) =>
      c.query(q(this.calls.sql.releaseBatch), [batch.json]),
    );
    const out = leases.map(() => false);
    for (const row of (results as unknown[])[2] as { i: unknown }[]) {
      out[batch.entries[int(row.i, 'batch row') - 1]!.positions[0]!] = true;
    }
    return out;
  }

  async list(prefix: string, limit: number, after: string): Promise<LeaseRecord[]> {
    const from = bytes(prefix);
    // UTF-8 never contains 0xff, so bumping the last byte bounds every name that starts with `prefix`.
    const to = from.length === 0 ? undefined : Buffer.from(from);
    if (to) to[to.length - 1]! += 1;
    const rows = (await this.calls.call((c) =>
      to
        ? c.execute(q(this.calls.sql.listRange), [from, to, bytes(after), limit])
        : c.execute(q(this.calls.sql.listFrom), [from, bytes(after), limit]),
    )) as Row[];
    const records: LeaseRecord[] = [];
    await inTurns(rows, (row) => records.push(toRecord(row)));
    return records;
  }
}

/**
 * Answer rows handled per turn of the event loop: decoding 4 KiB of lease data took about 13 µs a
 * row here, so a turn stays near 3 ms however many rows a batch or a list returns (design rule 6).
 */
const ROWS_PER_TURN = 250;

/** `fn` on every row in order, yielding to the loop between slices of `ROWS_PER_TURN`. */
async function inTurns<R>(rows: readonly R[], fn: (row: R) => unknown): Promise<void> {
  for (let start = 0; start < rows.length; start += ROWS_PER_TURN) {
    if (start > 0) await yieldToLoop();
    const end = Math.min(rows.length, start + ROWS_PER_TURN);
    for (let i = start; i < end; i++) fn(rows[i]!);
  }
}

/** The lease's resource, owner and token alone. */
export function pick(lease: LeaseRef): LeaseRef {
  return { resource: lease.resource, owner: lease.owner, token: lease.token };
}
