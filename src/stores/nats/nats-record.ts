import { randomBytes } from 'node:crypto';
import type { LeaseRecord } from '../../core/lease.js';
import { decodeData, withData } from '../../core/lease-data.js';
import {
  invalidRecord,
  recordExpiresAt,
  recordOwner,
  recordToken,
} from '../../core/record-check.js';
import type { NatsKvEntry } from './nats-driver.js';

/**
 * The value of a resource's key: `{"owner","token","expiresAt","nonce","data"}` as JSON. `token`
 * is the fencing token, raised by one with every acquire in the same conditional write that grants
 * it; `nonce` is random per grant, so a holder whose acquire got no answer can recognise its own
 * write when it reads the record back. A release writes `owner` `''`, `expiresAt` `0` and keeps the
 * token: the key is never deleted, so tokens never start again. `data` is the lease data in
 * `encodeData`'s form, left out when there is none (as in every value written before lease data
 * existed, which read with none). A value is written whole, so every write carries the data of the
 * revision it is conditioned on, unchanged, unless it is the write that sets it.
 */
export interface StoredRecord {
  readonly record: LeaseRecord;
  readonly nonce: string;
  /** The revision (stream sequence) of the write that holds this value. */
  readonly revision: number;
  /** The lease data as stored (`encodeData`'s form), `null` when there is none. */
  readonly data: string | null;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** A key's value; `data` in `encodeData`'s form, `null` for none (then no `data` member). */
export function encodeRecord(
  owner: string,
  token: number,
  expiresAt: number,
  nonce: string,
  data: string | null,
): Uint8Array {
  const value =
    data === null ? { owner, token, expiresAt, nonce } : { owner, token, expiresAt, nonce, data };
  // Buffer.from, not TextEncoder: several times cheaper for a short string on Node 20.
  return Buffer.from(JSON.stringify(value), 'utf8');
}

/** A fresh nonce for one grant. */
export function newNonce(): string {
  return randomBytes(9).toString('base64url');
}

/**
 * What an entry holds: the record, or `null` for no entry or a deletion marker (the key was
 * deleted or purged by something other than leasehold). A value leasehold does not write (not
 * JSON, a missing or mistyped field, a token that is not a positive safe integer, an owner over
 * `LIMITS.ownerMaxBytes`, an expiresAt that is not whole non-negative ms) is `RECORD_INVALID`:
 * every transition reads before it writes, so such a record is never taken nor overwritten.
 */
export function decodeEntry(resource: string, entry: NatsKvEntry | null): StoredRecord | null {
  if (entry === null || entry.operation !== 'PUT') return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(entry.value));
  } catch {
    throw invalidRecord(resource, 'the value is not JSON text');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw invalidRecord(resource, 'the value is not a JSON object');
  const { owner, token, expiresAt, nonce, data } = parsed as Record<string, unknown>;
  const record = {
    resource,
    owner: recordOwner(resource, owner),
    token: recordToken(resource, jsonNumber(resource, 'token', token)),
    expiresAt: recordExpiresAt(resource, jsonNumber(resource, 'expiresAt', expiresAt)),
  };
  if (typeof nonce !== 'string') throw invalidRecord(resource, `nonce is ${typeof nonce}`);
  if (data !== undefined && typeof data !== 'string')
    throw invalidRecord(resource, `data is ${data === null ? 'null' : typeof data}`);
  const text = data ?? null;
  return {
    record: withData(record, decodeData(text, resource)),
    nonce,
    revision: entry.revision,
    data: text === '' ? null : text,
  };
}

/** A field that must be a JSON number, as leasehold writes it (the checks then take its range). */
function jsonNumber(resource: string, field: string, value: unknown): unknown {
  if (typeof value === 'string')
    throw invalidRecord(resource, `${field} is a string, not a number`);
  return value;
}

/**
 * The token the next grant gets: one above the record's. A key someone deleted or purged left a
 * marker whose revision is above every revision the key had, and a token never exceeds the
 * revision of the write that granted it (each grant is a write to the stream), so the next token
 * starts above the marker's revision: still higher than any token handed out before.
 */
export function nextToken(entry: NatsKvEntry | null, stored: StoredRecord | null): number {
  const next = stored ? stored.record.token + 1 : entry ? entry.revision + 1 : 1;
  if (!Number.isSafeInteger(next)) {
    const resource = stored?.record.resource ?? '';
    throw invalidRecord(
      resource,
      `token is ${next - 1}, the largest safe integer: none can follow`,
    );
  }
  return next;
}
