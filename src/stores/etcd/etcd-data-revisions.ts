import type { LeaseRef } from '../../core/lease.js';
import { after } from './etcd-record.js';

/** How many resources `DataRevisions` keeps; when full, it starts over (see `expected`). */
const KEPT = 100_000;

/**
 * The mod revision of each held resource's data key as this store last read or wrote it, and
 * under which token. Every write of lease data is conditioned on it (see `dataAt` in etcd-ops.ts).
 *
 * Why: two writes under one token pass the same hold and token compares, and etcd can apply a
 * write after it answered it with an error (a proposal forwarded to a leader that was cut off is
 * delivered when the link heals; a driver's retry goes on after the call was answered). Without
 * this condition such a copy lands over the holder's later writes and the next holder reads an
 * older value. With it, of the writes sent while the store knew one revision at most one lands;
 * every later write carries the newer revision, which no earlier copy matches again. Revisions
 * only grow, and the data key is never deleted (`null` is an empty value), so no revision comes
 * back.
 *
 * What is not known (another process's lease, a forgotten entry) is guessed as 0, "no data key":
 * a write on a wrong guess fails its compare, reads the revision back in the same transaction and
 * is sent once more with it.
 */
export class DataRevisions {
  private readonly byResource = new Map<string, { token: number; revision: string }>();

  /** The data key of `resource` was at `revision` when read or written under `token`. */
  note(resource: string, token: number, revision: string): void {
    const known = this.byResource.get(resource);
    if (known && known.token === token && !after(revision, known.revision)) return;
    if (!known && this.byResource.size >= KEPT) this.byResource.clear();
    this.byResource.set(resource, { token, revision });
  }

  /** The revision a write under `lease` is conditioned on first. */
  expected(lease: LeaseRef): string {
    const known = this.byResource.get(lease.resource);
    return known && known.token === lease.token ? known.revision : '0';
  }

  /** `lease` ended (released or lost): its entry goes. */
  forget(lease: LeaseRef): void {
    if (this.byResource.get(lease.resource)?.token === lease.token)
      this.byResource.delete(lease.resource);
  }
}
