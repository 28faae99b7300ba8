import type { LeaseTransitions } from '../../core/delegating-store.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import { withData, type LeaseData } from '../../core/lease-data.js';
import { pick, planNames, planRanked } from './mysql-batch.js';
import type { MysqlCalls } from './mysql-calls.js';
import { queryOptions as q, type OkPacket, type SqlValue } from './mysql-driver.js';
import { decodeGrant } from './mysql-grant.js';
import { ref, type GrantScript } from './mysql-ops.js';
import {
  bytes,
  dataOf,
  granted,
  int,
  stored,
  toRecord,
  type GrantRow,
  type Row,
} from './mysql-record.js';

/** The single-lease transitions, `acquireAll` and `acquireFirst`, and the read of one record. */
export class MysqlTransitions implements LeaseTransitions {
  constructor(private readonly calls: MysqlCalls) {}

  /**
   * One prepared statement, whose answer is the token and where the server clock stood against
   * our estimate; with the estimate more than `WINDOW` ms off (a first call, a clock step), a
   * second round trip reads the stored expiry, and the estimate is corrected for the next call.
   */
  async tryAcquire(resource: string, owner: string, ttlMs: number): Promise<Lease | null> {
    const r = bytes(resource);
    const o = bytes(owner);
    return this.grant(resource, owner, ttlMs, r, o).catch((error: unknown) =>
      this.calls.refused(error, [resource]),
    );
  }

  /** `tryAcquire`'s round trip (or two). */
  private grant(
    resource: string,
    owner: string,
    ttlMs: number,
    r: Buffer,
    o: Buffer,
  ): Promise<Lease | null> {
    return this.calls.session(async (c) => {
      const sent = Date.now();
      const at = this.calls.clock.at(sent);
      const params = [r, o, at, ttlMs, at, o, ttlMs];
      let answer: unknown;
      let stored: { data: unknown } | undefined;
      if (this.calls.returning) {
        const [rows] = await c.execute(q(this.calls.sql.acquireReturning), params);
        const row = (rows as { answer: unknown; data: unknown }[])[0];
        answer = row?.answer ?? 0;
        stored = row;
      } else {
        const [results] = await c.query(q(this.calls.sql.acquireThenRead), [...params, r, o]);
        const [ok, rows] = results as [OkPacket, { data: unknown }[]];
        answer = ok.insertId;
        stored = rows[0];
      }
      const grant = decodeGrant(answer, at);
      if (!grant) return null;
      // Granted, but no longer this grant's by the time it was read: lapsed already, taken over.
      if (!stored) return null;
      const { token } = grant;
      const data = dataOf(stored.data, resource);
      const lease = (expiresAt: number): Lease =>
        withData({ resource, owner, token, expiresAt, ttlMs }, data);
      if (grant.now !== undefined) {
        this.calls.clock.observe(grant.now, sent);
        return lease(grant.now + ttlMs);
      }
      const [rows] = await c.execute(q(this.calls.sql.grantedExpiry), [r, o, token]);
      const expiry = (rows as { expires_at: unknown }[])[0];
      // Gone already: the lease lapsed (or was taken over) before we could read it.
      if (!expiry) return null;
      const expiresAt = int(expiry.expires_at, 'expires_at');
      this.calls.clock.observe(expiresAt - ttlMs, sent);
      return lease(expiresAt);
    });
  }

  /** One round trip, one transaction: every member granted, or none and nothing written. */
  async acquireAll(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease[] | null> {
    const batch = planNames(resources);
    const rows = await this.grantScript(
      this.calls.groupSql.acquireAll,
      batch.json,
      owner,
      ttlMs,
    ).catch((error: unknown) => this.calls.refused(error, resources));
    if (rows.length === 0) return null;
    if (rows.length !== resources.length)
      throw unexpected(`${rows.length} grants for a group of ${resources.length}`);
    const leases: Lease[] = new Array(resources.length);
    for (const row of rows) {
      const position = batch.positions[int(row.i, 'batch row') - 1]!;
      leases[position] = granted(resources[position]!, owner, row, ttlMs);
    }
    return leases;
  }

  /** One round trip, one transaction: the first free candidate in the caller's order, or `null`. */
  async acquireFirst(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    const rows = await this.grantScript(
      this.calls.groupSql.acquireFirst,
      planRanked(resources),
      owner,
      ttlMs,
      [bytes(resources[0]!), bytes(resources[0]!)],
    ).catch((error: unknown) => this.calls.refused(error, resources));
    const row = rows[0];
    if (!row) return null;
    const resource = resources[int(row.p, 'candidate position')];
    if (resource === undefined) throw unexpected(`candidate position ${String(row.p)}`);
    return granted(resource, owner, row, ttlMs);
  }

  /** Sends a grant script (`groupStatements`) and returns its answer rows; each grant's expiry corrects the clock estimate. */
  private async grantScript(
    script: GrantScript,
    json: Buffer,
    owner: string,
    ttlMs: number,
    extra: SqlValue[] = [],
  ): Promise<GrantRow[]> {
    return this.calls.session(async (c) => {
      const sent = Date.now();
      const [results] = await c.query(q(script.sql), [json, bytes(owner), ttlMs, ...extra]);
      const rows = (results as unknown[])[script.answerAt] as GrantRow[];
      if (rows[0]) this.calls.clock.observe(int(rows[0].expires_at, 'expires_at') - ttlMs, sent);
      return rows;
    });
  }

  async renew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    const ttl = ttlMs ?? lease.ttlMs;
    const expiresAt = await this.calls.session(async (c) => {
      const sent = Date.now();
      const [ok] = await c.execute(this.calls.sql.renew, [
        ttl,
        bytes(lease.resource),
        bytes(lease.owner),
        lease.token,
      ]);
      const stored = int((ok as OkPacket).insertId, 'expires_at');
      if (stored !== 0) this.calls.clock.observe(stored - ttl, sent);
      return stored;
    });
    if (expiresAt === 0) return null;
    return { ...pick(lease), expiresAt, ttlMs: ttl };
  }

  async release(lease: LeaseRef): Promise<boolean> {
    const ok = (await this.calls.call((c) =>
      c.execute(this.calls.sql.release, [bytes(lease.resource), bytes(lease.owner), lease.token]),
    )) as OkPacket;
    return ok.affectedRows > 0;
  }

  async writeData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    const ok = (await this.calls.call((c) =>
      c.execute(this.calls.sql.writeData, [stored(data), ...ref(lease)]),
    )) as OkPacket;
    return int(ok.insertId, 'token') !== 0;
  }

  async renewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    const ttl = ttlMs ?? lease.ttlMs;
    const expiresAt = await this.calls.session(async (c) => {
      const sent = Date.now();
      const [ok] = await c.execute(this.calls.sql.renewWithData, [
        stored(data),
        ttl,
        ...ref(lease),
      ]);
      const stamp = int((ok as OkPacket).insertId, 'expires_at');
      if (stamp !== 0) this.calls.clock.observe(stamp - ttl, sent);
      return stamp;
    });
    if (expiresAt === 0) return null;
    return withData({ ...pick(lease), expiresAt, ttlMs: ttl }, data);
  }

  async releaseWithData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    const ok = (await this.calls.call((c) =>
      c.execute(this.calls.sql.releaseWithData, [stored(data), ...ref(lease)]),
    )) as OkPacket;
    return ok.affectedRows > 0;
  }

  async get(resource: string): Promise<LeaseRecord | null> {
    const rows = (await this.calls.call((c) =>
      c.execute(q(this.calls.sql.get), [bytes(resource)]),
    )) as Row[];
    return rows[0] ? toRecord(rows[0]) : null;
  }
}

function unexpected(what: string): LeaseError {
  return new LeaseError(ErrorCode.STORE_UNAVAILABLE, `the server answered ${what}`, {
    retryable: false,
  });
}
