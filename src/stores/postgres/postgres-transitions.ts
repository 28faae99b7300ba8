import type { LeaseTransitions } from '../../core/delegating-store.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import { withData, type LeaseData } from '../../core/lease-data.js';
import type { PostgresCalls } from './postgres-calls.js';
import { isGroupRefusal, isInvalidRefusal } from './postgres-errors.js';
import {
  byteLength,
  granted,
  renewed,
  safeInteger,
  toBytea,
  toRecord,
  type Row,
} from './postgres-record.js';

/** The single-lease transitions, `acquireAll` and `acquireFirst`: each one statement. */
export class PostgresTransitions implements LeaseTransitions {
  constructor(private readonly calls: PostgresCalls) {}

  async get(resource: string): Promise<LeaseRecord | null> {
    const [row] = await this.calls.query(this.calls.sql.get, [resource]);
    return row ? toRecord({ ...row, resource }) : null;
  }

  tryAcquire(resource: string, owner: string, ttlMs: number): Promise<Lease | null> {
    return this.calls.run(this.calls.sql.acquire, [resource, owner, ttlMs]).then(
      ({ rows: [row] }) => (row ? granted(resource, owner, ttlMs, row) : null),
      (error: unknown) => refused(this.calls, error, [resource]),
    );
  }

  /**
   * One statement: every member through the single acquire's compare-and-set in resource order,
   * or none (see `statements().acquireAll`). A member taken since the statement's snapshot makes
   * it fail whole (`isGroupRefusal`); that is answered as the refusal it is.
   */
  async acquireAll(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease[] | null> {
    let rows: Row[];
    try {
      rows = await this.calls.query(this.calls.sql.acquireAll, [resources, owner, ttlMs]);
    } catch (error) {
      if (isGroupRefusal(error)) return null;
      return refused(this.calls, error, resources);
    }
    if (rows.length === 0) return null;
    if (rows.length !== resources.length)
      throw new LeaseError(
        ErrorCode.STORE_UNAVAILABLE,
        `${this.calls.options.label} acquireAll failed: ${rows.length} of ${resources.length} members came back`,
        { retryable: false },
      );
    const leases: Lease[] = new Array(resources.length);
    for (const row of rows) {
      const i = Number(row.ord) - 1;
      leases[i] = granted(resources[i]!, owner, ttlMs, row);
    }
    return leases;
  }

  /**
   * One statement picks the first free candidate and takes it (see `statements().acquireFirst`).
   * Only when the never-written candidate it tried was created by someone else during the
   * statement is it sent again: that record is written now, so every repeat has one candidate
   * fewer to lose, and a caller racing others for the first permits still finds a free one.
   */
  async acquireFirst(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    let row: Row | undefined;
    for (let tries = 0; tries <= resources.length; tries++) {
      [row] = await this.calls
        .query(this.calls.sql.acquireFirst, [resources, owner, ttlMs])
        .catch((error: unknown) => refused(this.calls, error, resources));
      if (row?.token !== null) break;
    }
    if (!row || row.token === null) return null;
    return granted(String(row.resource), owner, ttlMs, row);
  }

  async renew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    const ttl = ttlMs ?? lease.ttlMs;
    const [row] = await this.calls.query(this.calls.sql.renew, [
      lease.resource,
      lease.owner,
      lease.token,
      ttl,
    ]);
    return row ? renewed(lease, safeInteger(row.expires_at, 'expires_at'), ttl) : null;
  }

  release(lease: LeaseRef): Promise<boolean> {
    const values = [lease.resource, lease.owner, lease.token, ...this.calls.channelParam()];
    return this.calls.run(this.calls.sql.release, values).then((result) => result.rowCount === 1);
  }

  /** One statement: the compare-and-set on owner and token, and the data when it held. */
  async writeData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    const values = [lease.resource, lease.owner, lease.token, toBytea(data)];
    this.calls.sizer.observe(byteLength(values[3]), 1);
    return (await this.calls.run(this.calls.sql.writeData, values)).rowCount === 1;
  }

  /** One statement: the plain renew's UPDATE, and the data written when it changed the row. */
  async renewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    const ttl = ttlMs ?? lease.ttlMs;
    const values = [lease.resource, lease.owner, lease.token, ttl, toBytea(data)];
    this.calls.sizer.observe(byteLength(values[4]), 1);
    const [row] = await this.calls.query(this.calls.sql.renewData, values);
    return row
      ? withData(renewed(lease, safeInteger(row.expires_at, 'expires_at'), ttl), data)
      : null;
  }

  /** One statement: the plain release's UPDATE (its NOTIFY included), and the data. */
  async releaseWithData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    const values = [
      lease.resource,
      lease.owner,
      lease.token,
      toBytea(data),
      ...this.calls.channelParam(),
    ];
    this.calls.sizer.observe(byteLength(values[3]), 1);
    return (await this.calls.run(this.calls.sql.releaseData, values)).rowCount === 1;
  }
}

/**
 * Rethrows `error`; when it is an acquire's refusal of a corrupt record (`isInvalidRefusal`),
 * as `RECORD_INVALID` saying what is wrong with the first such record of `resources`, read
 * after the refusal (a second round trip on this path only). A valid record refused for its
 * token being 2^53 − 1 already is `STORE_UNAVAILABLE`, not retryable: no higher one exists.
 */
export async function refused(
  calls: PostgresCalls,
  error: unknown,
  resources: readonly string[],
): Promise<never> {
  if (!isInvalidRefusal(error)) throw error;
  const [row] = await calls.query(calls.sql.invalid, [resources]);
  if (!row)
    throw new LeaseError(
      ErrorCode.RECORD_INVALID,
      `${calls.options.label} refused a record of ${JSON.stringify(resources[0])}${resources.length > 1 ? ' …' : ''} that was not one leasehold writes, since repaired or removed`,
      { retryable: false, cause: error },
    );
  const { resource } = toRecord(row); // throws RECORD_INVALID for what is wrong with it
  throw new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `${calls.options.label} cannot grant ${JSON.stringify(resource)}: its token is ${Number.MAX_SAFE_INTEGER}, and the next, ${2n ** 53n}, would be past 2^53 − 1`,
    { retryable: false, resource, cause: error },
  );
}
