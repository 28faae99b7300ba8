import { invalidRecord } from '../../core/record-check.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import { sameData, withData, type LeaseData } from '../../core/lease-data.js';
import type { RecordCalls } from '../../core/record-calls.js';
import type { AcquireOutcome } from '../../core/store.js';
import type { Clock } from '../../core/time.js';
import type { DynamodbCalls } from './dynamodb-calls.js';
import type { Item } from './dynamodb-driver.js';
import { wasRetried } from '../aws/aws-errors.js';
import { conditionItem, isConditionFailed } from './dynamodb-errors.js';
import {
  acquireRequest,
  getRequest,
  releaseRequest,
  renewRequest,
  renewWithDataRequest,
  writeDataRequest,
} from './dynamodb-ops.js';
import { toRecord } from './dynamodb-record.js';

/**
 * The transitions on one item, each one conditional `UpdateItem`, and the read of one. A failed
 * condition is an answer; after a retry it is checked against the record, which an earlier attempt
 * may have written (see `DynamodbStore`).
 */
export class DynamodbTransitions implements RecordCalls {
  constructor(
    private readonly calls: DynamodbCalls,
    private readonly clock: Pick<Clock, 'now'>,
    private readonly maxClockSkewMs: number,
  ) {}

  /**
   * One conditional update. Where DynamoDB returns the item that failed the condition, a refusal
   * carries it as `holder` (dynalite does not: no holder there).
   */
  async acquire(
    resource: string,
    owner: string,
    ttlMs: number,
    operation: string,
  ): Promise<AcquireOutcome> {
    const now = this.clock.now();
    const expiresAt = now + ttlMs;
    const request = acquireRequest(
      this.calls.table,
      resource,
      owner,
      expiresAt,
      now - this.maxClockSkewMs,
    );
    let answer: { Attributes?: Item };
    try {
      answer = (await this.calls.item(operation, 'UpdateItem', request)) as {
        Attributes?: Item;
      };
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      const item = conditionItem(error);
      const seen = item && toRecord(item);
      if (wasRetried(error)) {
        // An earlier attempt of this same request may have landed before its answer was lost:
        // then the record holds exactly what it wrote, and the lease is ours.
        const record = seen ?? (await this.get(resource));
        if (record?.owner === owner && record.expiresAt === expiresAt) {
          const lease = { resource, owner, token: record.token, expiresAt, ttlMs };
          return { resource, lease: withData(lease, record.data) };
        }
      }
      const lapsed = seen && (seen.owner === '' || seen.expiresAt < now - this.maxClockSkewMs);
      if (lapsed && seen.token >= Number.MAX_SAFE_INTEGER)
        throw invalidRecord(resource, `token is ${seen.token}: no safe token is left above it`);
      return seen ? { resource, lease: null, holder: seen } : { resource, lease: null };
    }
    // The condition let only valid records through, but cannot see a fraction: a token read
    // here that is not a positive safe integer (2.5 + 1) is `RECORD_INVALID`, never a lease.
    const { token, data } = toRecord({ resource: { S: resource }, ...answer.Attributes });
    return { resource, lease: withData({ resource, owner, token, expiresAt, ttlMs }, data) };
  }

  /**
   * One conditional update; with `data` (not `undefined`), it is set in the same update. Without,
   * the answer carries no data: the caller's lease keeps what it had, the record is untouched.
   */
  async renew(
    lease: Lease,
    ttlMs: number | undefined,
    data?: LeaseData | null,
  ): Promise<Lease | null> {
    const table = this.calls.table;
    const ttl = ttlMs ?? lease.ttlMs;
    const expiresAt = this.clock.now() + ttl;
    const request =
      data === undefined
        ? renewRequest(table, lease, expiresAt)
        : renewWithDataRequest(table, lease, expiresAt, data);
    const renewed = (at: number): Lease => {
      const base = { resource: lease.resource, owner: lease.owner, token: lease.token };
      return withData(
        { ...base, expiresAt: at, ttlMs: ttl },
        data === undefined ? lease.data : data,
      );
    };
    try {
      await this.calls.item('renew', 'UpdateItem', request);
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      // Still ours, with a later expiry than this renewal would write (a newer renewal landed
      // first)? Then the lease is renewed at least this far: a success, leaving the expiry be.
      const item = conditionItem(error);
      const record = item ? toRecord(item) : await this.get(lease.resource);
      if (
        record?.owner !== lease.owner ||
        record.token !== lease.token ||
        record.expiresAt < expiresAt
      )
        return null;
      // The data this renewal carried did not land with it: written now, under the same owner
      // and token (a second request, only in this race of one holder's own renewals).
      if (data !== undefined && !sameData(record.data ?? null, data)) {
        if (!(await this.writeData(lease, data))) return null;
      }
      return renewed(record.expiresAt);
    }
    return renewed(expiresAt);
  }

  /** One conditional update; with `data` (not `undefined`), it is set in the same update. */
  async release(lease: LeaseRef, data?: LeaseData | null): Promise<boolean> {
    try {
      await this.calls.item('release', 'UpdateItem', releaseRequest(this.calls.table, lease, data));
      return true;
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      if (!wasRetried(error)) return false;
      // Released by an earlier attempt whose answer was lost? Only this lease's holder can have
      // emptied the owner at this token: a later acquire would have raised it.
      const item = conditionItem(error);
      const record = item ? toRecord(item) : await this.get(lease.resource);
      return record?.owner === '' && record.token === lease.token;
    }
  }

  /** One conditional update on owner and token that sets the data alone. */
  async writeData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    try {
      await this.calls.item(
        'writeData',
        'UpdateItem',
        writeDataRequest(this.calls.table, lease, data),
      );
      return true;
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      return false;
    }
  }

  /** One `GetItem`. */
  async get(resource: string): Promise<LeaseRecord | null> {
    const answer = (await this.calls.item(
      'get',
      'GetItem',
      getRequest(this.calls.table, resource),
    )) as { Item?: Item };
    return answer.Item ? toRecord(answer.Item) : null;
  }
}
