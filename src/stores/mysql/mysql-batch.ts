import type { LeaseRef } from '../../core/lease.js';

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
