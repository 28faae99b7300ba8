import type { LeaseRef } from '../../core/lease.js';
import { encodeData, type LeaseData } from '../../core/lease-data.js';
import { LIMITS } from '../../core/options.js';
import type { Item } from './dynamodb-driver.js';

/**
 * The request bodies of every transition: one conditional `UpdateItem` each. `owner` is a
 * DynamoDB reserved word, so every attribute goes through `ExpressionAttributeNames`.
 *
 * Item layout (the table's key schema is `resource` HASH, type S, no sort key):
 * `resource` S, `owner` S (`''` once released), `token` N, `expiresAt` N (ms since the epoch on
 * the writer's clock, `0` once released), and `data` S, the lease data in `encodeData`'s form
 * (`s…` or `b…` base64), absent when there is none — as on every item written before lease data
 * existed, which therefore read with no data and need no migration. Only `writeData` and the
 * renew / release that carry data name `data`; a plain renew or release never sends or touches it.
 */
const NAMES = Object.freeze({
  '#r': 'resource',
  '#o': 'owner',
  '#t': 'token',
  '#e': 'expiresAt',
  '#d': 'data',
});

/** The names every transition uses (DynamoDB refuses a name that its expressions leave unused). */
const LEASE_NAMES = Object.freeze({ '#o': NAMES['#o'], '#t': NAMES['#t'], '#e': NAMES['#e'] });

/** The names of a transition that also sets the data. */
const DATA_NAMES = Object.freeze({ ...LEASE_NAMES, '#d': NAMES['#d'] });

/** The names of `writeData`, which leaves `expiresAt` out of both expressions. */
const WRITE_NAMES = Object.freeze({ '#o': NAMES['#o'], '#t': NAMES['#t'], '#d': NAMES['#d'] });

const key = (resource: string): Item => ({ resource: { S: resource } });
const num = (value: number): { N: string } => ({ N: String(value) });

/**
 * How a transition carrying `data` sets it: `SET` clauses (to join to the transition's own) and
 * its value, or the `REMOVE` clause that clears it (`null`).
 */
function dataClauses(data: LeaseData | null): { set: string; remove: string; values: Item } {
  const text = encodeData(data);
  return text === null
    ? { set: '', remove: ' REMOVE #d', values: {} }
    : { set: ', #d = :data', remove: '', values: { ':data': { S: text } } };
}

/** An item that never held a lease: absent, or holding none of the lease's attributes. */
const BARE = 'attribute_not_exists(#o) AND attribute_not_exists(#t) AND attribute_not_exists(#e)';

/**
 * A record leasehold writes that is released or lapsed: a number `expiresAt` from 0 to `:lapsed`,
 * a number token from 1 to 2^53 − 2 (its successor still safe), and a string owner (every string
 * is at least `''`) of at most `LIMITS.ownerMaxBytes` characters. A comparison of an attribute of
 * another type, or of a missing one, is false. Flat, with no parentheses (`AND` binds before
 * `OR`): dynalite's parser took several times as long on the same condition nested.
 */
const LAPSED_RECORD =
  '#e BETWEEN :zero AND :lapsed AND #t BETWEEN :one AND :lastBase AND #o >= :none AND NOT size(#o) > :ownerMax';

const RECORD_VALUES = Object.freeze({
  ':zero': num(0),
  ':lastBase': num(Number.MAX_SAFE_INTEGER - 1),
  ':none': { S: '' },
  ':ownerMax': num(LIMITS.ownerMaxBytes),
});

/**
 * Acquire: the item is absent, released, or expired by more than the allowed skew
 * (`expiresAt + skew < now`, written `expiresAt < now − skew`). A release writes `expiresAt` 0,
 * so one comparison covers released and expired alike, and an item holding none of `owner`,
 * `token` and `expiresAt` (never written by a transition) counts as absent, as `toRecord` reads
 * it. Any other item is granted over only if it is a record leasehold writes, checked by the
 * server in the same condition (`LAPSED_RECORD`): so a corrupt item — an attribute missing or of
 * another type, a token not in 1 … 2^53 − 2 (`ADD` would start a missing one at 0, grant past a
 * negative one, or leave the safe range), a negative `expiresAt`, an owner over
 * `LIMITS.ownerMaxBytes` characters — is refused, never overwritten, and reads as
 * `RECORD_INVALID` (see dynamodb-record.ts). A condition cannot see a fraction: a fractional
 * token is granted as the next fraction, which the client refuses as `RECORD_INVALID` (never a
 * lease), and which stays fractional for every later acquire. The token is bumped in the
 * same update (`ADD` starts a missing number at 0) and the whole item comes back with `ALL_NEW`,
 * the data the previous holders left included (no read, no extra capacity: a write is charged by
 * the item's size either way). When the
 * condition fails, DynamoDB puts the item that failed it on the error (`ALL_OLD`, no read capacity
 * consumed); emulators that ignore the parameter (dynalite) simply leave it off.
 */
export function acquireRequest(
  table: string,
  resource: string,
  owner: string,
  expiresAt: number,
  cutoff: number,
): object {
  return {
    TableName: table,
    Key: key(resource),
    UpdateExpression: 'SET #o = :owner, #e = :expiresAt ADD #t :one',
    ConditionExpression: `${BARE} OR ${LAPSED_RECORD}`,
    ExpressionAttributeNames: LEASE_NAMES,
    ExpressionAttributeValues: {
      ':owner': { S: owner },
      ':expiresAt': num(expiresAt),
      ':one': num(1),
      // The latest whole `expiresAt` below the cutoff (every valid `expiresAt` is whole).
      ':lapsed': num(Math.ceil(cutoff) - 1),
      ...RECORD_VALUES,
    },
    ReturnValues: 'ALL_NEW',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/**
 * Renew: owner and token still ours, and never moving `expiresAt` backwards — an older renewal
 * delayed in flight that lands after a newer one must not shorten what the newer one granted
 * (the holder believes the newer deadline). Found by the protocol model (`RENEW_FORWARD_ONLY`).
 * A renew whose answer was lost and that is sent again finds the same owner and token and an
 * expiry no later than its own, and succeeds again. An `expiresAt` that is not a number of at least
 * 0 (a record made corrupt by hand) fails the condition. On a failed condition the old item comes back
 * with the error where the service supports it.
 */
export function renewRequest(table: string, lease: LeaseRef, expiresAt: number): object {
  return {
    TableName: table,
    Key: key(lease.resource),
    UpdateExpression: 'SET #e = :expiresAt',
    ConditionExpression: '#o = :owner AND #t = :token AND #e BETWEEN :zero AND :expiresAt',
    ExpressionAttributeNames: LEASE_NAMES,
    ExpressionAttributeValues: {
      ':owner': { S: lease.owner },
      ':token': num(lease.token),
      ':expiresAt': num(expiresAt),
      ':zero': num(0),
    },
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/** Renew carrying data: `renewRequest`, the data set (or removed) in the same update. */
export function renewWithDataRequest(
  table: string,
  lease: LeaseRef,
  expiresAt: number,
  data: LeaseData | null,
): object {
  const { set, remove, values } = dataClauses(data);
  const request = renewRequest(table, lease, expiresAt) as { ExpressionAttributeValues: Item };
  return {
    ...request,
    UpdateExpression: `SET #e = :expiresAt${set}${remove}`,
    ExpressionAttributeNames: DATA_NAMES,
    ExpressionAttributeValues: { ...request.ExpressionAttributeValues, ...values },
  };
}

/**
 * Release: owner and token still ours (and `expiresAt` a number of at least 0: a record made
 * corrupt by hand is refused, not blanked); the item stays, with its token, so tokens never
 * restart, and with its data, for the next holder. With `data`, that is set (or removed) in the same update.
 */
export function releaseRequest(table: string, lease: LeaseRef, data?: LeaseData | null): object {
  const { set, remove, values } =
    data === undefined ? { set: '', remove: '', values: {} } : dataClauses(data);
  return {
    TableName: table,
    Key: key(lease.resource),
    UpdateExpression: `SET #o = :released, #e = :zero${set}${remove}`,
    ConditionExpression: '#o = :owner AND #t = :token AND #e >= :zero',
    ExpressionAttributeNames: data === undefined ? LEASE_NAMES : DATA_NAMES,
    ExpressionAttributeValues: {
      ':owner': { S: lease.owner },
      ':token': num(lease.token),
      ':released': { S: '' },
      ':zero': num(0),
      ...values,
    },
  };
}

/**
 * writeData: owner and token still ours (as renew and release compare); only `data` changes.
 * Sent again after a lost answer, it finds the same owner and token and lands again.
 */
export function writeDataRequest(table: string, lease: LeaseRef, data: LeaseData | null): object {
  const { values } = dataClauses(data);
  return {
    TableName: table,
    Key: key(lease.resource),
    UpdateExpression: data === null ? 'REMOVE #d' : 'SET #d = :data',
    ConditionExpression: '#o = :owner AND #t = :token',
    ExpressionAttributeNames: WRITE_NAMES,
    ExpressionAttributeValues: {
      ':owner': { S: lease.owner },
      ':token': num(lease.token),
      ...values,
    },
  };
}

export function getRequest(table: string, resource: string): object {
  return { TableName: table, Key: key(resource), ConsistentRead: true };
}

/**
 * One page of a consistent scan, filtered to resources starting with `prefix` and at or after
 * `floor` (each when not `''`). The filter only trims what comes back: a scan reads, and is
 * charged for, every item of every page it visits.
 */
export function scanRequest(
  table: string,
  prefix: string,
  floor: string,
  startKey: Item | undefined,
): object {
  const conditions: string[] = [];
  const values: Item = {};
  if (prefix !== '') {
    conditions.push('begins_with(#r, :prefix)');
    values[':prefix'] = { S: prefix };
  }
  if (floor !== '') {
    conditions.push('#r >= :floor');
    values[':floor'] = { S: floor };
  }
  return {
    TableName: table,
    ConsistentRead: true,
    ExclusiveStartKey: startKey,
    ...(conditions.length === 0
      ? {}
      : {
          FilterExpression: conditions.join(' AND '),
          ExpressionAttributeNames: { '#r': NAMES['#r'] },
          ExpressionAttributeValues: values,
        }),
  };
}

/**
 * A lower bound for a server-side filter on resources that sort after `after` in code-point
 * order: `after` cut before its first character at or above U+D800. DynamoDB compares strings
 * by their UTF-8 bytes (code-point order), but dynalite compares JavaScript strings (UTF-16 code
 * units), and the two orders differ only between a surrogate pair (U+10000 and up) and
 * U+E000–U+FFFF. Below U+D800 both agree, so every resource after `after` is at or above this
 * floor in either order; the exact `after` test is made here, in code-point order.
 */
export function scanFloor(after: string): string {
  const cut = after.search(/[\uD800-\uFFFF]/);
  return cut === -1 ? after : after.slice(0, cut);
}

export function describeTableRequest(table: string): object {
  return { TableName: table };
}

export function createTableRequest(table: string): object {
  return {
    TableName: table,
    AttributeDefinitions: [{ AttributeName: 'resource', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'resource', KeyType: 'HASH' }],
    BillingMode: 'PAY_PER_REQUEST',
  };
}
