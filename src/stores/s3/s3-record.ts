import { randomUUID } from 'node:crypto';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { LeaseRecord } from '../../core/lease.js';
import { decodeData, withData } from '../../core/lease-data.js';
import {
  invalidRecord,
  recordExpiresAt,
  recordOwner,
  recordToken,
} from '../../core/record-check.js';

/*
 * The record codec: a lease object's body (JSON) as a record and back, and the checks that refuse
 * an object leasehold did not write.
 */

/**
 * The body of a lease object: the record plus `write`, a random id of the write that made it.
 * S3's ETag is (for a plain PUT) the MD5 of the body, so without `write` two writes of the same
 * record (a renew landing twice within a millisecond) would have one ETag, and a conditional
 * write meant for the first could overwrite the second. With it every write has its own ETag,
 * and a writer that got no clear answer recognises its own write by reading `write` back.
 *
 * `data` is the lease data in `encodeData`'s form, left out when there is none (as in every object
 * written before lease data existed, which read with none). A body is written whole, so every PUT
 * carries the data of the record it replaces, unchanged, unless it is the write that sets it.
 */
export interface StoredRecord {
  /** The record, its `data` decoded. */
  readonly record: LeaseRecord;
  readonly write: string;
  /** The lease data as stored (`encodeData`'s form), `null` when there is none. */
  readonly data: string | null;
}

/** A record as read, with the ETag that a conditional write must name to replace it. */
export interface Versioned extends StoredRecord {
  /** The ETag without its quotes. */
  readonly etag: string;
}

export function newWriteId(): string {
  return randomUUID();
}

/** A lease object's body; `data` in `encodeData`'s form, `null` for none (then no `data` member). */
export function encodeRecord(record: LeaseRecord, write: string, data: string | null): string {
  const body = {
    resource: record.resource,
    owner: record.owner,
    token: record.token,
    expiresAt: record.expiresAt,
    write,
  };
  return JSON.stringify(data === null ? body : { ...body, data });
}

/**
 * Reads a lease object's body, checked (see core/record-check.ts): JSON naming this resource,
 * an owner string of at most `LIMITS.ownerMaxBytes`, a token that is a positive safe integer, a
 * non-negative safe integer `expiresAt`, and a `write` id. Anything else at a record's key is
 * `RECORD_INVALID`, never a guess: every transition reads before it writes, so such an object is
 * never treated as free nor overwritten. `data` that is not a string is a non-retryable
 * `STORE_UNAVAILABLE`, as lease data in no known form is (core/lease-data.ts).
 */
export function decodeRecord(body: string, resource: string, key: string): StoredRecord {
  let value: Record<string, unknown> | undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
      value = parsed as Record<string, unknown>;
  } catch {
    value = undefined;
  }
  const where = `the object "${key}"`;
  if (value === undefined) throw invalidRecord(resource, `${where} holds no JSON object`);
  if (value.resource !== resource) throw invalidRecord(resource, `${where} names another resource`);
  const owner = recordOwner(resource, value.owner);
  const token = recordTokenOf(resource, value.token);
  const expiresAt = recordExpiresAt(resource, value.expiresAt);
  if (typeof value.write !== 'string') throw invalidRecord(resource, `${where} has no write id`);
  // Lease data in no known form stays what core/lease-data.ts makes of it: STORE_UNAVAILABLE.
  if (value.data !== undefined && typeof value.data !== 'string')
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `the object "${key}" is not a lease record of resource ${JSON.stringify(resource)}: its data is not leasehold's`,
      { retryable: false },
    );
  const data = (value.data as string | undefined) || null;
  return {
    record: withData({ resource, owner, token, expiresAt }, decodeData(data, resource)),
    write: value.write,
    data,
  };
}

/** A token as JSON holds it: a number (a string of digits is not what leasehold writes). */
function recordTokenOf(resource: string, value: unknown): number {
  if (typeof value !== 'number')
    throw invalidRecord(resource, `token is ${value === undefined ? 'missing' : typeof value}`);
  return recordToken(resource, value);
}
