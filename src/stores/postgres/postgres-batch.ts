import type { LeaseBatches } from '../../core/delegating-store.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import { readPaged } from '../../core/read-paged.js';
import { prefixEnd, type AcquireOutcome } from '../../core/store.js';
import { yieldToLoop } from '../../core/time.js';
import type { PostgresCalls } from './postgres-calls.js';
import { columns } from './postgres-ops.js';
import { byteLength, granted, renewed, safeInteger, toRecord } from './postgres-record.js';
import { refused } from './postgres-transitions.js';

/** The batches, each one statement (a long `acquireMany` several), and `list`. */
export class PostgresBatch implements LeaseBatches {
  constructor(private readonly calls: PostgresCalls) {}

  /**
   * One statement for the whole batch: the grants, and the live record behind each refusal. Where
   * records carry lease data, a big batch goes as several statements one after another, the event
   * loop free between them, each bringing back about `ReplySizer`'s budget of data.
   */
  async acquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    const size = this.calls.sizer.records(resources.length);
    if (size >= resources.length) return this.acquireManyOnce(resources, owner, ttlMs);
    const outcomes: AcquireOutcome[] = [];
    for (let start = 0; start < resources.length; start += size) {
      if (start > 0) await yieldToLoop();
      const chunk = resources.slice(start, start + size);
      for (const outcome of await this.acquireManyOnce(chunk, owner, ttlMs)) outcomes.push(outcome);
    }
    return outcomes;
  }

  private async acquireManyOnce(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    const rows = await this.calls
      .query(this.calls.sql.acquireMany, [resources, owner, ttlMs])
      .catch((error: unknown) => refused(this.calls, error, resources));
    let dataBytes = 0;
    for (const row of rows) dataBytes += byteLength(row.data) + byteLength(row.held_data);
    this.calls.sizer.observe(dataBytes, rows.length);
    const outcomes: AcquireOutcome[] = resources.map((resource) => ({ resource, lease: null }));
    for (const row of rows) {
      const i = Number(row.ord) - 1;
      const resource = resources[i]!;
      if (row.token !== null) {
        outcomes[i] = { resource, lease: granted(resource, owner, ttlMs, row) };
      } else if (row.held_owner !== null) {
        const holder = toRecord({
          resource,
          owner: row.held_owner,
          token: row.held_token,
          expires_at: row.held_expires_at,
          data: row.held_data,
        });
        outcomes[i] = { resource, lease: null, holder };
      }
    }
    return outcomes;
  }

  async renewMany(leases: readonly Lease[], ttlMs: number | undefined): Promise<(Lease | null)[]> {
    const ttls = leases.map((lease) => ttlMs ?? lease.ttlMs);
    const rows = await this.calls.query(this.calls.sql.renewMany, [...columns(leases), ttls]);
    const expiresAt = new Map<number, number>();
    for (const row of rows)
      expiresAt.set(Number(row.ord), safeInteger(row.expires_at, 'expires_at'));
    return leases.map((lease, i) => {
      const at = expiresAt.get(i + 1);
      return at === undefined ? null : renewed(lease, at, ttls[i]!);
    });
  }

  async releaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    const rows = await this.calls.query(this.calls.sql.releaseMany, [
      ...columns(leases),
      ...this.calls.channelParam(),
    ]);
    const done = new Set(rows.map((row) => Number(row.ord)));
    return leases.map((_, i) => done.has(i + 1));
  }

  /**
   * One statement for the page; where records carry lease data, a long page is read as several
   * statements one after another (each past the last record of the one before), the event loop
   * free between them, so decoding never holds it long. A record that changes meanwhile shows its
   * old or its new state, as across two `list` calls paging with `after`.
   */
  list(prefix: string, limit: number, after: string): Promise<LeaseRecord[]> {
    return readPaged(
      limit,
      after,
      (from, n) => this.listPage(prefix, n, from),
      (left) => this.calls.sizer.records(left),
    );
  }

  private async listPage(prefix: string, limit: number, after: string): Promise<LeaseRecord[]> {
    const to = prefixEnd(prefix);
    const rows =
      to === undefined
        ? await this.calls.query(this.calls.sql.listFrom, [prefix, after, limit])
        : await this.calls.query(this.calls.sql.listRange, [prefix, to, after, limit]);
    let dataBytes = 0;
    for (const row of rows) dataBytes += byteLength(row.data);
    this.calls.sizer.observe(dataBytes, rows.length);
    return rows.map(toRecord);
  }
}
