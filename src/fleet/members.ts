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
    .map((m) => `${m.id}\u0000${m.limit}\u0000${m.capacity ?? 1}`)
    .sort()
    .join('\u0001');
}

const LIMIT_MARK = '#max=';
const CAPACITY_MARK = '#cap=';
/** A membership slot's name: `@` and 8 hex digits, then the limit and capacity marks when set. */
const SLOT = /^@[0-9a-f]{8}$/;

/**
 * Membership lives in slots: records named `<prefix>@<8 hex>[#max=<n>]` whose `owner` is the
 * worker. A joining worker reuses a free slot (released, or left expired by a worker that died)
 * before it makes a new one, so the records a fleet lists at every scan stay about as many as its
 * largest membership, however often workers restart with fresh owner ids. A slot's token only
 * counts its own grants; nothing is fenced with it.
 */
export function newSlot(prefix: string, maxLeases: number, capacity = 1): string {
  return prefix + '@' + randomBytes(4).toString('hex') + suffix(maxLeases, capacity);
}

/**
 * The marks after a slot's name: `#max=<n>` for a limit, then `#cap=<x>` for a capacity other
 * than 1. (Managers before capacities existed read a slot with a capacity mark as no member.)
 */
function suffix(maxLeases: number, capacity: number): string {
  const limit = Number.isFinite(maxLeases) ? `${LIMIT_MARK}${maxLeases}` : '';
  return capacity === 1 ? limit : `${limit}${CAPACITY_MARK}${capacity}`;
}

interface Parsed {
  readonly name: string;
  readonly limit: number;
  readonly capacity: number;
}

/** A membership record's name part, limit and capacity, or `undefined` for a record no manager wrote. */
function parse(record: LeaseRecord, prefix: string): Parsed | undefined {
  let rest = record.resource.slice(prefix.length);
  let capacity = 1;
  const capMark = SLOT.test(rest.slice(0, 9)) ? rest.indexOf(CAPACITY_MARK) : -1;
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
  return { name, limit, capacity };
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
    members.set(record.owner, {
      id: record.owner,
      limit: Math.min(parsed.limit, known?.limit ?? parsed.limit),
      ...(capacity === 1 ? {} : { capacity }),
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
): string[] {
  const free = records
    .filter((r) => {
      if (!isFree(r, storeNow, graceMs)) return false;
      const parsed = parse(r, prefix);
      return (
        parsed !== undefined &&
        SLOT.test(parsed.name) &&
        parsed.limit === maxLeases &&
        parsed.capacity === capacity
      );
    })
    .map((r) => r.resource);
  shuffle(free, random);
  return [...free.slice(0, 3), newSlot(prefix, maxLeases, capacity)];
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
