import type { LeaseRecord } from '../core/lease.js';
import type { Member } from './assign.js';

/** Where each worker's membership lease lives, so a worker with no leases yet still counts. */
export function membersPrefix(group: string): string {
  return `leasehold/members/${group}/`;
}

const LIMIT_MARK = '#max=';

/**
 * The membership resource of a worker: `<prefix><owner>`, with `#max=<n>` appended when the worker
 * takes at most n leases, so that peers compute shares that fit it without reading anything else.
 */
export function memberResource(prefix: string, owner: string, maxLeases: number): string {
  return Number.isFinite(maxLeases) ? `${prefix}${owner}${LIMIT_MARK}${maxLeases}` : prefix + owner;
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
    if (record.owner === '' || storeNow > record.expiresAt + skewMs) continue;
    const rest = record.resource.slice(prefix.length);
    if (!rest.startsWith(record.owner)) continue; // not a membership record written by a manager
    const suffix = rest.slice(record.owner.length);
    let limit = Infinity;
    if (suffix.startsWith(LIMIT_MARK)) {
      const n = Number(suffix.slice(LIMIT_MARK.length));
      if (Number.isSafeInteger(n) && n >= 0) limit = n;
    } else if (suffix !== '') continue;
    const known = members.get(record.owner);
    members.set(record.owner, { id: record.owner, limit: Math.min(limit, known?.limit ?? limit) });
  }
  return [...members.values()];
}
