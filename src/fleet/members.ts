import { randomBytes } from 'node:crypto';
import { isLive, type LeaseRecord } from '../core/lease.js';
import type { Member } from './assign.js';
import { shuffle } from './util.js';

/** Where each worker's membership lease lives, so a worker with no leases yet still counts. */
export function membersPrefix(group: string): string {
  return `leasehold/members/${group}/`;
}

/**
 * The record whose token announces membership changes (see `MemberView`): not a member itself.
 * Its name cannot be a slot (`@…`) nor an owner's own record (its owner is whoever announces).
 */
export function generationKey(prefix: string): string {
  return `${prefix}~generation`;
}

/** The same members give the same key, in any order. */
export function membersKey(members: readonly Member[]): string {
  return members
    .map((m) => `${m.id}\u0000${m.limit}\u0000${m.capacity ?? 1}\u0000${m.buckets ?? ''}`)
    .sort()
    .join('\u0001');
}

const LIMIT_MARK = '#max=';
const CAPACITY_MARK = '#cap=';
/** A bucketed fleet's bucket count (see `BucketManager`), last of the marks. */
const BUCKETS_MARK = '#b=';
/** A membership slot's name: `@` and 8 hex digits, then the limit and capacity marks when set. */
const SLOT = /^@[0-9a-f]{8}$/;

/**
 * Membership lives in slots: records named `<prefix>@<8 hex>[#max=<n>]` whose `owner` is the
 * worker. A joining worker reuses a free slot (released, or left expired by a worker that died)
 * before it makes a new one, so the records a fleet lists at every scan stay about as many as its
 * largest membership, however often workers restart with fresh owner ids. A slot's token only
 * counts its own grants; nothing is fenced with it.
 */
export function newSlot(prefix: string, maxLeases: number, capacity = 1, buckets?: number): string {
  return prefix + '@' + randomBytes(4).toString('hex') + suffix(maxLeases, capacity, buckets);
}

/**
 * The marks after a slot's name: `#max=<n>` for a limit, then `#cap=<x>` for a capacity other
 * than 1. (Managers before capacities existed read a slot with a capacity mark as no member.)
 */
function suffix(maxLeases: number, capacity: number, buckets?: number): string {
  const limit = Number.isFinite(maxLeases) ? `${LIMIT_MARK}${maxLeases}` : '';
  const cap = capacity === 1 ? '' : `${CAPACITY_MARK}${capacity}`;
  return `${limit}${cap}${buckets === undefined ? '' : `${BUCKETS_MARK}${buckets}`}`;
}

interface Parsed {
  readonly name: string;
  readonly limit: number;
  readonly capacity: number;
  readonly buckets: number | undefined;
}

/** A membership record's name part, limit and capacity, or `undefined` for a record no manager wrote. */
function parse(record: LeaseRecord, prefix: string): Parsed | undefined {
  let rest = record.resource.slice(prefix.length);
  let capacity = 1;
  let buckets: number | undefined;
  const slot = SLOT.test(rest.slice(0, 9));
  const bucketsMark = slot ? rest.indexOf(BUCKETS_MARK) : -1;
  if (bucketsMark >= 0) {
    buckets = Number(rest.slice(bucketsMark + BUCKETS_MARK.length));
    if (!Number.isSafeInteger(buckets) || buckets <= 0) return undefined;
    rest = rest.slice(0, bucketsMark);
  }
  const capMark = slot ? rest.indexOf(CAPACITY_MARK) : -1;
  if (capMark >= 0) {
    capacity = Number(rest.slice(capMark + CAPACITY_MARK.length));
    if (!Number.isFinite(capacity) || capacity <= 0) return undefined;
    rest = rest.slice(0, capMark);
  }
  const mark = rest.lastIndexOf(LIMIT_MARK);
  const name = mark < 0 ? rest : rest.slice(0, mark);
  let limit = Infinity;
  if (mark >= 0) {
    const n = Number(rest.slice(mark + LIMIT_MARK.length));
    if (!Number.isSafeInteger(n) || n < 0) return undefined;
    limit = n;
  }
  // A slot, or a record named after its owner (as managers before slots wrote them).
  if (!SLOT.test(name) && (name !== record.owner || record.resource === generationKey(prefix)))
    return undefined;
  return { name, limit, capacity, buckets };
}

/** Whether a membership record is free to take: released, or expired by `storeNow` (plus `graceMs`). */
function isFree(record: LeaseRecord, storeNow: number, graceMs: number): boolean {
  return !isLive(record, storeNow, graceMs);
}

/** The live members among membership records, with their limits. */
export function liveMembers(
  records: readonly LeaseRecord[],
  prefix: string,
  storeNow: number,
  skewMs: number,
): Member[] {
  const members = new Map<string, Member>();
  for (const record of records) {
    if (isFree(record, storeNow, skewMs)) continue;
    const parsed = parse(record, prefix);
    if (!parsed) continue;
    const known = members.get(record.owner);
    const capacity = Math.min(parsed.capacity, known?.capacity ?? parsed.capacity);
    const buckets = known?.buckets ?? parsed.buckets;
    members.set(record.owner, {
      id: record.owner,
      limit: Math.min(parsed.limit, known?.limit ?? parsed.limit),
      ...(capacity === 1 ? {} : { capacity }),
      ...(buckets === undefined ? {} : { buckets }),
    });
  }
  return [...members.values()];
}

/**
 * Slots a worker with this limit and capacity may take, in the order to try them: free slots with
 * the same marks (shuffled, so workers joining at once spread out), then a new one.
 */
export function slotsToTry(
  records: readonly LeaseRecord[],
  prefix: string,
  maxLeases: number,
  storeNow: number,
  graceMs: number,
  random: () => number = Math.random,
  capacity = 1,
  buckets?: number,
): string[] {
  const free = records
    .filter((r) => {
      if (!isFree(r, storeNow, graceMs)) return false;
      const parsed = parse(r, prefix);
      return (
        parsed !== undefined &&
        SLOT.test(parsed.name) &&
        parsed.limit === maxLeases &&
        parsed.capacity === capacity &&
        parsed.buckets === buckets
      );
    })
    .map((r) => r.resource);
  shuffle(free, random);
  return [...free.slice(0, 3), newSlot(prefix, maxLeases, capacity, buckets)];
}

/** The live membership records (the generation record and records no manager wrote left out). */
export function liveMemberRecords(
  records: readonly LeaseRecord[],
  prefix: string,
  storeNow: number,
  skewMs: number,
): LeaseRecord[] {
  return records.filter((r) => !isFree(r, storeNow, skewMs) && parse(r, prefix) !== undefined);
}
