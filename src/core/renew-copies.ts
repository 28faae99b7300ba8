import type { Lease } from './lease.js';
import { withData } from './lease-data.js';

/**
 * A renewal batch with each lease (resource, owner, token) once: a lease listed more than once is
 * renewed once, with the longest TTL its copies ask for, and every copy is answered with that
 * renewal (its expiry and TTL; each copy's own data kept). Renewed one after another, a copy with a
 * shorter TTL written last would shorten the record below what an earlier copy was told, and
 * that holder would believe in more than is stored.
 */
export interface RenewCopies {
  /** The leases to renew, each once, in order of first appearance, with the TTL to renew for. */
  readonly unique: readonly Lease[];
  /** The answers to `unique`, spread back over the batch as given. */
  answer(renewed: readonly (Lease | null)[]): (Lease | null)[];
}

export function renewCopies(leases: readonly Lease[], ttlMs: number | undefined): RenewCopies {
  const firstOf = new Map<string, number>();
  const slotOf = new Array<number>(leases.length);
  const unique: Lease[] = [];
  leases.forEach((lease, i) => {
    const key = `${lease.token}\0${lease.owner.length}\0${lease.owner}${lease.resource}`;
    const slot = firstOf.get(key);
    if (slot === undefined) {
      firstOf.set(key, unique.length);
      slotOf[i] = unique.length;
      unique.push(lease);
      return;
    }
    slotOf[i] = slot;
    if (ttlMs === undefined && lease.ttlMs > unique[slot]!.ttlMs)
      unique[slot] = { ...unique[slot]!, ttlMs: lease.ttlMs };
  });
  if (unique.length === leases.length) return { unique: leases, answer: (renewed) => [...renewed] };
  return {
    unique,
    answer: (renewed) =>
      leases.map((lease, i) => {
        const r = renewed[slotOf[i]!];
        if (!r) return null;
        return unique[slotOf[i]!] === lease ? r : withData(r, lease.data);
      }),
  };
}
