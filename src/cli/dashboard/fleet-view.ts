import { isLive, type LeaseRecord } from '../../core/lease.js';
import { shares } from '../../fleet/assign.js';
import { publishedStanding } from '../../fleet/load-book.js';
import { liveMembers } from '../../fleet/members.js';
import { INTERNAL_PREFIX } from '../live/lease-state.js';
import type { FleetMember, FleetView } from '../live/wire-types.js';
import { isFairLine, parseKey } from '../record-key.js';

/** Where every group's membership records live (`membersPrefix(group)` is under it). */
const MEMBERS_ROOT = `${INTERNAL_PREFIX}members/`;
/** A bucketed group's membership (`BucketManager`): shown as the group with "(buckets)". */
const BUCKET_MEMBERS_ROOT = `${INTERNAL_PREFIX}bucket-members/`;
/** A bucketed group's bucket leases: work, though under the reserved prefix. */
const BUCKETS_ROOT = `${INTERNAL_PREFIX}buckets/`;

/**
 * The fleet as the records show it: the live members of every group (`liveMembers`, on the
 * membership records under `leasehold/members/<group>/`), how many live leases each holds, and
 * its fair share (`shares`, as the fleet splits them) of what the members hold plus the lapsed
 * records waiting to be taken again; leases of owners that are no member are left out. Exact for
 * one fleet per store, a guide when several groups share one.
 */
export function fleetView(records: Iterable<LeaseRecord>, now: number, skewMs: number): FleetView {
  const byGroup = new Map<string, LeaseRecord[]>();
  const held = new Map<string, number>();
  let leases = 0;
  let lapsed = 0;
  for (const record of records) {
    const root = record.resource.startsWith(MEMBERS_ROOT)
      ? MEMBERS_ROOT
      : record.resource.startsWith(BUCKET_MEMBERS_ROOT)
        ? BUCKET_MEMBERS_ROOT
        : undefined;
    if (root) {
      const slash = record.resource.indexOf('/', root.length);
      if (slash < 0) continue;
      const group = record.resource.slice(root.length, slash);
      const key = `${root}${group}/`;
      byGroup.set(key, [...(byGroup.get(key) ?? []), record]);
    } else if (
      (record.resource.startsWith(INTERNAL_PREFIX) && !record.resource.startsWith(BUCKETS_ROOT)) ||
      record.owner === '' ||
      isFairLine(parseKey(record.resource))
    ) {
      // Bookkeeping, not work: a waiter's place in a fair line is no lease held.
      continue;
    } else if (isLive(record, now, skewMs)) {
      leases++;
      held.set(record.owner, (held.get(record.owner) ?? 0) + 1);
    } else lapsed++;
  }
  const grouped = [...byGroup].flatMap(([prefix, list]) => {
    const bucketed = prefix.startsWith(BUCKET_MEMBERS_ROOT);
    const name = prefix.slice((bucketed ? BUCKET_MEMBERS_ROOT : MEMBERS_ROOT).length, -1);
    const group = bucketed ? `${name} (buckets)` : name;
    return liveMembers(list, prefix, now, skewMs).map((m) => ({
      ...m,
      group,
      weighed: standingOf(list, m.id),
    }));
  });
  const ids = new Set(grouped.map((m) => m.id));
  // What the members share: what they hold, and what lapsed and is waiting to be taken again.
  let shared = lapsed;
  for (const [owner, n] of held) if (ids.has(owner)) shared += n;
  const share = shares(grouped, shared);
  const members = grouped
    .map((m) => ({
      id: m.id,
      group: m.group,
      limit: Number.isFinite(m.limit) ? m.limit : null,
      leases: held.get(m.id) ?? 0,
      fairShare: share.get(m.id) ?? 0,
      ...(m.weighed ? { weighed: m.weighed } : {}),
    }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const others = [...held]
    .filter(([id]) => !ids.has(id))
    .map(([id, n]) => ({ id, leases: n }))
    .sort((a, b) => b.leases - a.leases);
  return { members, others, leases };
}

/** What member `id` last published of its standing in its own membership record, if anything. */
function standingOf(
  records: readonly LeaseRecord[],
  id: string,
): FleetMember['weighed'] | undefined {
  for (const record of records) {
    const standing = record.owner === id ? publishedStanding(record) : undefined;
    if (standing) return standing;
  }
  return undefined;
}
