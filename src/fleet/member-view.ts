import type { LeaseStore } from '../core/store.js';
import type { Clock } from '../core/time.js';
import type { Member } from './assign.js';
import { generationKey, membersKey } from './members.js';

/**
 * Full membership reads a settled fleet makes per scan period, all workers together (each worker
 * reads in a scan with probability `FULL_READS_PER_SCAN / members`). They find members that died
 * without a word; three make missing one for a whole period unlikely (about e⁻³).
 */
export const FULL_READS_PER_SCAN = 3;

export interface MemberViewOptions {
  store: LeaseStore;
  prefix: string;
  owner: string;
  /** TTL of the brief lease that announces a change (released at once). */
  ttlMs: number;
  clock: Clock;
  /** Reads every membership record: the live members, this worker among them. */
  readAll: () => Promise<Member[]>;
  random?: () => number;
}

/**
 * This worker's view of the live members, kept without reading every membership record at every
 * scan. A worker that joins or leaves, or that finds the membership changed (a member expired),
 * announces it by raising the token of one generation record (`generationKey`): a brief acquire and
 * release. Each scan reads that one record and reads every membership record only when its token
 * moved since the last full read, when a member's expiry is due (`markDirty`), or by the sampling
 * above. So the records a settled fleet reads per scan period grow as its size, not its square.
 * The view is advice, as all assignment is: a stale one costs speed, the store's CAS keeps safety.
 */
export class MemberView {
  private members: Member[] | undefined;
  private key = '';
  private seen: number | undefined;
  private dirty = true;
  private readonly random: () => number;

  constructor(private readonly options: MemberViewOptions) {
    this.random = options.random ?? Math.random;
  }

  /** The next scan reads every membership record (a member's expiry is due). */
  markDirty(): void {
    this.dirty = true;
  }

  /** The live members now: one read of the generation record, and of every record when needed. */
  async current(): Promise<Member[]> {
    if (this.members && !this.dirty && this.members.length <= FULL_READS_PER_SCAN) {
      // Every worker of a fleet this small reads every record at every scan: the generation
      // record would add a read and tell nothing. Forget it, so a larger fleet reads it afresh.
      this.seen = undefined;
      this.members = await this.options.readAll();
      this.key = membersKey(this.members);
      return this.members;
    }
    const generation = await this.generation();
    const moved = generation !== this.seen;
    const sampled = this.random() * (this.members?.length ?? 0) < FULL_READS_PER_SCAN;
    if (this.members && !moved && !this.dirty && !sampled) return this.members;
    this.dirty = false;
    this.seen = generation;
    const previous = this.members === undefined ? undefined : this.key;
    const members = await this.options.readAll();
    this.members = members;
    this.key = membersKey(members);
    // A change nobody announced (a member died, or an announcement failed): tell the others.
    // One try here, so the scan is not held up; the retries go on in the background.
    if (previous !== undefined && !moved && previous !== this.key && !(await this.announce(1)))
      void this.announce(3).catch(() => false);
    return members;
  }

  /**
   * Raises the generation record's token, so every worker reads the membership at its next scan
   * (at once where the store can watch). Another worker announcing at this instant holds the record
   * for one round trip: try again, `attempts` times in all over a few hundred ms at most (unless
   * `cancelled()`), then leave it to the sampling. Resolves `false` when it did not get through.
   */
  async announce(attempts = 4, cancelled: () => boolean = () => false): Promise<boolean> {
    const { store, prefix, owner, ttlMs, clock } = this.options;
    const resource = generationKey(prefix);
    for (let attempt = 0; attempt < attempts && !cancelled(); attempt++) {
      if (attempt > 0) {
        const waitMs = 5 * 4 ** attempt * (0.5 + this.random());
        await new Promise<void>((resolve) => clock.setTimeout(resolve, waitMs));
        if (cancelled()) break;
      }
      const lease = await store.tryAcquire(resource, owner, ttlMs);
      if (lease) {
        await store.release(lease).catch(() => undefined);
        return true;
      }
    }
    return false;
  }

  /** Whether the generation record moved since the last full read (one read of one record; none for a small fleet). */
  async moved(): Promise<boolean> {
    // A small fleet (see `current`) reads everything at every scan and keeps no generation.
    if (this.seen === undefined) return false;
    return (await this.generation()) !== this.seen;
  }

  private async generation(): Promise<number> {
    const record = await this.options.store.get(generationKey(this.options.prefix));
    return record?.token ?? 0;
  }
}
