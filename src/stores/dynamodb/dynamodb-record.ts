import type { LeaseRecord } from '../../core/lease.js';
import { decodeData, withData } from '../../core/lease-data.js';
import {
  invalidRecord,
  recordExpiresAt,
  recordOwner,
  recordToken,
} from '../../core/record-check.js';
import type { AttributeValue, Item } from './dynamodb-driver.js';

/** The DynamoDB type an attribute value holds (`S`, `N`, `BOOL`, …), for a message. */
function typeOf(value: AttributeValue): string {
  return Object.keys(value)[0] ?? 'none';
}

/**
 * One attribute of the type leasehold writes it with: its text, `undefined` when it is missing.
 * An attribute of another DynamoDB type (`S` where `N` belongs) is `RECORD_INVALID`.
 */
function attribute(resource: string, item: Item, name: string, type: 'S' | 'N'): unknown {
  const value = item[name];
  if (value === undefined) return undefined;
  const text = (value as Record<string, unknown>)[type];
  if (typeof text !== 'string')
    throw invalidRecord(resource, `${name} is of DynamoDB type ${typeOf(value)}, not ${type}`);
  return text;
}

/**
 * A stored item as a record, checked (see core/record-check.ts): `owner` an `S` of at most
 * `LIMITS.ownerMaxBytes`, `token` an `N` that is a positive safe integer, `expiresAt` a
 * non-negative safe integer `N`. Anything else, an attribute missing or of another type
 * included, is `RECORD_INVALID`: never read as free. The one exception is an item holding none of
 * the three (only its key, perhaps data): no transition ever granted it, and it reads as released
 * at token 0, as the acquire condition treats it (see `acquireRequest`). A missing `data` is no
 * data (`data` left out of the record).
 */
export function toRecord(item: Item): LeaseRecord {
  const resource = item.resource?.S ?? '';
  const bare = item.owner === undefined && item.token === undefined && item.expiresAt === undefined;
  const record = bare
    ? { resource, owner: '', token: 0, expiresAt: 0 }
    : {
        resource,
        owner: recordOwner(resource, attribute(resource, item, 'owner', 'S')),
        token: recordToken(resource, attribute(resource, item, 'token', 'N')),
        expiresAt: recordExpiresAt(resource, attribute(resource, item, 'expiresAt', 'N')),
      };
  return withData(record, decodeData(item.data?.S, resource));
}
