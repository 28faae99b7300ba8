import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import { decodeData, encodeData, withData, type LeaseData } from '../../core/lease-data.js';
import {
  invalidRecord,
  recordExpiresAt,
  recordOwner,
  recordToken,
} from '../../core/record-check.js';
import type { LeaseError } from '../../core/errors.js';
import type { AcquireOutcome } from '../../core/store.js';

/*
 * The record codec: a record's hash fields and the scripts' replies (see redis-ops.ts) as records
 * and leases, lease data as the `data` field keeps it, and the checks that refuse a record
 * leasehold does not write.
 */

/**
 * Throws `RECORD_INVALID` when a script refused a record it will not take: the acquire scripts
 * answer `{false, position, problem}` (position from 1 among `resources`, the candidates or batch
 * members in the order sent; see CHECK in redis-ops.ts), which arrives as `[null, position,
 * problem]`. Any other reply passes.
 */
export function checkRefusal(value: unknown, resources: readonly string[]): void {
  if (!Array.isArray(value) || value[0] !== null) return;
  const resource = resources[Number(value[1]) - 1] ?? resources[0] ?? '';
  throw invalidRecord(resource, String(value[2]));
}

/**
 * A record's hash fields as read by HMGET or the LIST script, checked (`RECORD_INVALID` for a
 * record leasehold does not write), or `null` when the key holds none of them.
 */
export function redisRecord(
  resource: string,
  owner: string | null | undefined,
  token: string | number | null | undefined,
  expiresAt: string | number | null | undefined,
  data: string | null | undefined,
): LeaseRecord | null {
  if (token == null && owner == null && expiresAt == null) {
    if (data == null) return null;
    throw invalidRecord(resource, 'token is missing');
  }
  // Missing fields arrive as null; the checks name them "missing".
  // Missing fields arrive as null, and are named "missing"; checked in the scripts' order (CHECK).
  const checkedToken = recordToken(resource, token ?? undefined);
  const checkedExpiresAt = recordExpiresAt(resource, expiresAt ?? undefined);
  const checkedOwner = recordOwner(resource, owner ?? undefined);
  const record = {
    resource,
    owner: checkedOwner,
    token: checkedToken,
    expiresAt: checkedExpiresAt,
  };
  return withData(record, decodeData(data, resource));
}

/** `RECORD_INVALID` for a record key that holds another Redis type than a hash (HMGET's WRONGTYPE). */
export function notAHash(resource: string, cause: unknown): LeaseError {
  return invalidRecord(resource, 'the key holds another Redis type, not a hash', cause);
}

/** Lease data as the `data` field and the scripts take it: `encodeData`'s form, `''` for none. */
export function storedData(data: LeaseData | null): string {
  return encodeData(data) ?? '';
}

/**
 * ACQUIRE's answer, `0` or "token expiresAt[ data]", or a coalesced acquisition's, `0` or the
 * three values: the lease granted, or `null`.
 */
export function acquired(
  value: unknown,
  resource: string,
  owner: string,
  ttlMs: number,
): Lease | null {
  if (value === 0) return null;
  checkRefusal(value, [resource]);
  if (typeof value === 'string') {
    const { fields, data } = splitReply(value, 2);
    const lease = { resource, owner, token: fields[0]!, expiresAt: fields[1]!, ttlMs };
    return withData(lease, decodeData(data, resource));
  }
  const [token, expiresAt, data] = value as [number, number, string | null];
  const lease = { resource, owner, token: Number(token), expiresAt: Number(expiresAt), ttlMs };
  return withData(lease, decodeData(data, resource));
}

/**
 * ACQUIRE_MANY's answer for `group`: four values per resource (holder, token, expiresAt, data),
 * holder `''` where this call granted it; else the live holder that refused it.
 */
export function acquiredMany(
  reply: readonly (string | number)[],
  group: readonly string[],
  owner: string,
  ttlMs: number,
): AcquireOutcome[] {
  checkRefusal(reply, group);
  return group.map((resource, k): AcquireOutcome => {
    const holder = String(reply[4 * k]);
    const token = Number(reply[4 * k + 1]);
    const expiresAt = Number(reply[4 * k + 2]);
    const data = decodeData(reply[4 * k + 3] as string | null, resource);
    if (holder === '')
      return { resource, lease: withData({ resource, owner, token, expiresAt, ttlMs }, data) };
    const record = withData({ resource, owner: holder, token, expiresAt }, data);
    return { resource, lease: null, holder: record };
  });
}

/**
 * ACQUIRE_ALL's answer: `0` (refused, nothing written), or the shared expiresAt, then each
 * member's token, then each member's data.
 */
export function acquiredAll(
  value: unknown,
  resources: readonly string[],
  owner: string,
  ttlMs: number,
): Lease[] | null {
  if (value === 0) return null;
  checkRefusal(value, resources);
  const reply = value as (string | number | null)[];
  const expiresAt = Number(reply[0]);
  const n = resources.length;
  return resources.map((resource, k) => {
    const token = Number(reply[k + 1]);
    const data = decodeData(reply[n + 1 + k] as string | null, resource);
    return withData({ resource, owner, token, expiresAt, ttlMs }, data);
  });
}

/**
 * ACQUIRE_FIRST's answer among `candidates`, `0` or "position token expiresAt[ data]" (position
 * from 1), or a coalesced one's, `0` or the four values: the lease granted, or `null`.
 */
export function acquiredFirst(
  value: unknown,
  candidates: readonly string[],
  owner: string,
  ttlMs: number,
): Lease | null {
  if (value === 0) return null;
  checkRefusal(value, candidates);
  if (Array.isArray(value)) {
    const [position, token, expiresAt, data] = value as [number, number, number, string];
    const resource = candidates[position - 1]!;
    const lease = { resource, owner, token: Number(token), expiresAt: Number(expiresAt), ttlMs };
    return withData(lease, decodeData(data, resource));
  }
  const { fields, data } = splitReply(String(value), 3);
  const [position, token, expiresAt] = fields;
  const resource = candidates[position! - 1]!;
  const lease = { resource, owner, token: token!, expiresAt: expiresAt!, ttlMs };
  return withData(lease, decodeData(data, resource));
}

/**
 * A renewal's answer, the new expiresAt or `0` when the record is no longer the lease's: the lease
 * renewed for `ttlMs` (with `data` when the renewal wrote some), or `null`.
 */
export function renewed(
  reply: unknown,
  lease: LeaseRef,
  ttlMs: number,
  data?: LeaseData | null,
): Lease | null {
  const expiresAt = Number(reply);
  if (expiresAt === 0) return null;
  const { resource, owner, token } = lease;
  const plain = { resource, owner, token, expiresAt, ttlMs };
  return data === undefined ? plain : withData(plain, data);
}

/**
 * One shard's LIST answer: five values per record (resource, owner, token, expiresAt, data), or
 * `[null, resource, problem]` at a key that is not a hash.
 */
export function listed(reply: readonly (string | null)[]): LeaseRecord[] {
  if (reply[0] === null) throw invalidRecord(String(reply[1]), String(reply[2]));
  const page: LeaseRecord[] = [];
  for (let i = 0; i + 4 < reply.length; i += 5) {
    const record = redisRecord(reply[i]!, reply[i + 1], reply[i + 2], reply[i + 3], reply[i + 4]);
    if (record) page.push(record);
  }
  return page;
}

/**
 * A script's one-string answer: `count` numbers separated by spaces, then, when the record has
 * lease data, a space and the data as stored (which may itself hold spaces).
 */
function splitReply(text: string, count: number): { fields: number[]; data: string | null } {
  const fields: number[] = [];
  let from = 0;
  for (let i = 0; i < count; i++) {
    const space = text.indexOf(' ', from);
    const end = space < 0 ? text.length : space;
    fields.push(Number(text.slice(from, end)));
    from = end + 1;
  }
  return { fields, data: from < text.length ? text.slice(from) : null };
}
