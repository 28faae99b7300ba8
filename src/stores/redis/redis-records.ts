import type { LeaseRecord } from '../../core/lease.js';
import { decodeData, withData } from '../../core/lease-data.js';
import {
  invalidRecord,
  recordExpiresAt,
  recordOwner,
  recordToken,
} from '../../core/record-check.js';

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

/** Whether a Redis error is WRONGTYPE: the key holds another type than the command reads. */
export function isWrongType(error: unknown): boolean {
  return /^WRONGTYPE/.test(error instanceof Error ? error.message : String(error));
}
