import { ErrorCode, invalidArgument, LeaseError } from '../core/errors.js';
import { isLive } from '../core/lease.js';
import type { LeaseStore } from '../core/store.js';
import type { Clock } from '../core/time.js';
import type { HeldLease } from '../client/held-lease.js';
import type { LeaseClient } from '../client/lease-client.js';
import type { Member } from './assign.js';
import type { ExpiryTimers } from './expiry-timers.js';
import type { LoadBook } from './load-book.js';
import type { FleetLayout } from './manager-options.js';
import { MemberView } from './member-view.js';
import {
  generationKey,
  liveMemberRecords,
  liveMembers,
  membersKey,
  slotsToTry,
} from './members.js';
import type { TakeoverTracker } from './takeover-tracker.js';
import { listAll, PAGE_SIZE } from './util.js';

/** What a worker's membership needs of its manager. */
export interface MembershipHost {
  readonly client: LeaseClient;
  readonly store: LeaseStore;
  readonly clock: Clock;
  /** Where the group's membership records live. */
  readonly prefix: string;
  readonly maxLeases: number;
  readonly capacity: number;
  /** Set for a `BucketManager`: its bucket count goes in the slot's name. */
  readonly layout: FleetLayout | undefined;
  /** How long the membership must stay unchanged at start (0: no wait). */
  readonly settleMs: number;
  /** Where the loads published in membership records go, and what this worker publishes. */
  readonly loads: LoadBook;
  /** Told which members' records expired (died rather than stopped). */
  readonly takeovers: TakeoverTracker;
  /** Armed for the member records that are not being renewed. */
  readonly timers: ExpiryTimers;
  /** The membership may have changed: the manager should reconcile. */
  changed(): void;
  /** Whether a reconcile pass is running (it reads the membership itself). */
  reconciling(): boolean;
  /** Whether the manager is stopping. */
  stopping(): boolean;
  /** Leases held for wanted resources (the membership lease not included): their loads are published. */
  held(): HeldLease[];
  /** How many leases are held for wanted resources. */
  heldCount(): number;
}

/**
 * One worker's place in its fleet: its membership lease (a slot, see `slotsToTry`), joined at
 * start and again if it lapsed; the view of the live members (read through `MemberView`, with the
 * loads they publish); who joined since the shares were last dealt; and this worker's own load
 * reports, published in its membership record at a renewal. It also keeps the estimate of the
 * store's clock that expiry timers use, taken from the membership lease's grants and renewals.
 */
export class Membership {
  private member: HeldLease | undefined;
  private storeOffset = 0;
  private publishing = false;
  private readonly view: MemberView;
  /** The members the shares were last dealt among (see `noteDealt`), by key and by id. */
  private dealtKey = '';
  private dealt = new Set<string>();

  constructor(private readonly host: MembershipHost) {
    this.view = new MemberView({
      store: host.store,
      prefix: host.prefix,
      owner: host.client.owner,
      ttlMs: host.client.ttlMs,
      clock: host.clock,
      readAll: () => this.readMembers(),
    });
  }

  /** The membership lease, once joined (it stays after a loss until the next join). */
  get lease(): HeldLease | undefined {
    return this.member;
  }

  /** Whether `resource` is one of this group's membership records. */
  covers(resource: string): boolean {
    return resource.startsWith(this.host.prefix);
  }

  /** How many members the shares were last dealt among. */
  get size(): number {
    return this.dealt.size;
  }

  /** The store's time now: our own clock for local-clock stores, else ours plus the offset seen on our leases. */
  storeNow(): number {
    const { clock, store } = this.host;
    return clock.now() + (store.capabilities.clock === 'local' ? 0 : this.storeOffset);
  }

  /** The live members now (see `MemberView.current`). */
  current(): Promise<Member[]> {
    return this.view.current();
  }

  /** The next read of the membership reads every record (a member's expiry is due). */
  markDirty(): void {
    this.view.markDirty();
  }

  /** Tells the other workers the membership changed (see `MemberView.announce`). */
  announce(attempts: number): Promise<boolean> {
    return this.view.announce(attempts);
  }

  /**
   * Takes a membership slot (again, if our membership lapsed): a free one of the group, else a new
   * one (see `slotsToTry`). Refuses an owner id that a live member already uses.
   */
  async join(): Promise<void> {
    if (this.member && !this.member.isTerminal) return;
    const { client, store, prefix } = this.host;
    const owner = client.owner;
    const records = await listAll(store, prefix, PAGE_SIZE);
    const storeNow = this.storeNow();
    const skewMs = client.maxClockSkewMs;
    const live = liveMembers(records, prefix, storeNow, skewMs);
    if (live.some((m) => m.id === owner)) {
      if (this.member === undefined) {
        throw new LeaseError(
          ErrorCode.INVALID_ARGUMENT,
          `another live worker uses the owner id ${JSON.stringify(owner)}`,
        );
      }
      // Our own membership lapsed here before it lapses at the store (the holder gives up
      // drift + skew early): wait for that record to expire, then join again.
      throw new LeaseError(
        ErrorCode.LEASE_UNAVAILABLE,
        `the membership lease of ${JSON.stringify(owner)} was lost and is not free again yet; retrying`,
        { retryable: true },
      );
    }
    const grace = skewMs + (store.expiryLagMs ?? 0);
    const slots = slotsToTry(
      records,
      prefix,
      this.host.maxLeases,
      storeNow,
      grace,
      Math.random,
      this.host.capacity,
      this.host.layout?.buckets,
    );
    for (const slot of slots) {
      const member = await client.tryAcquire(slot);
      if (!member) continue; // another worker joining took it first
      this.member = member;
      this.observe(member);
      member.on('renewed', (lease) => {
        this.observe(lease);
        void this.publishLoads();
      });
      // Without watch, peers would hear of an announced change only at their next scan: look at
      // the generation record with each membership heartbeat instead (one record per beat).
      if (!store.capabilities.watch) member.on('renewed', () => void this.pollGeneration());
      this.view.markDirty();
      // Failing to announce costs the others speed (they sample the membership), not safety; and
      // a start is not held up by another worker's announcement: retries go on in the background.
      if (!(await this.view.announce(1).catch(() => true)))
        void this.view.announce(4, () => this.host.stopping()).catch(() => false);
      return;
    }
    throw new LeaseError(
      ErrorCode.LEASE_UNAVAILABLE,
      'every membership slot tried was taken by another joining worker; retrying',
      { retryable: true },
    );
  }

  /** Waits until the membership has been stable for `settleMs` (at most about a TTL). */
  async settle(): Promise<void> {
    const { clock, settleMs } = this.host;
    if (settleMs === 0) return;
    let last = membersKey(await this.readMembers());
    // However long a fleet keeps growing, a worker waits at most about a TTL.
    const until = clock.monotonic() + this.host.client.ttlMs;
    while (clock.monotonic() < until && !this.host.stopping()) {
      await new Promise<void>((resolve) => clock.setTimeout(resolve, settleMs));
      const key = membersKey(await this.readMembers());
      if (key === last) return;
      last = key;
    }
  }

  /**
   * In a bucketed fleet, refuses to take buckets while a live member counts buckets otherwise
   * (its buckets cover other resources: both could work on one resource). A worker that holds
   * buckets already goes on: the newcomer saw it in the read after its own join, and refuses.
   * Two that join at once each read after their own join, so at least one sees the other.
   */
  checkLayout(members: readonly Member[]): void {
    const mine = this.host.layout?.buckets;
    if (mine === undefined || this.host.heldCount() > 0) return;
    const owner = this.host.client.owner;
    const other = members.find((m) => m.id !== owner && m.buckets !== mine);
    if (other)
      throw invalidArgument(
        'buckets',
        `is ${mine} here, but live worker ${JSON.stringify(other.id)} of this group uses ${other.buckets ?? 'no buckets'}: every worker of a group must give the same count (a new count needs a new group)`,
      );
  }

  /** Whether `key` (see `membersKey`) differs from the members the shares were last dealt among. */
  isNewView(key: string): boolean {
    return key !== this.dealtKey;
  }

  /** Members not among those the shares were last dealt among (nobody, before the first dealing). */
  newcomers(members: readonly Member[]): Set<string> {
    const newcomers = new Set(this.dealt.size === 0 ? [] : members.map((m) => m.id));
    for (const id of this.dealt) newcomers.delete(id);
    return newcomers;
  }

  /**
   * The shares were dealt afresh among `members` (whose key is `key`): they are the view now.
   * Returns whether the view shrank (fewer members than before).
   */
  noteDealt(members: readonly Member[], key: string): boolean {
    const shrank = members.length < this.dealt.size;
    this.dealtKey = key;
    this.dealt = new Set(members.map((m) => m.id));
    return shrank;
  }

  /** Every membership record read: the live members, this worker among them even before it joined. */
  private async readMembers(): Promise<Member[]> {
    const { client, store, prefix, maxLeases, capacity, layout } = this.host;
    const owner = client.owner;
    const records = await listAll(store, prefix, PAGE_SIZE);
    const storeNow = this.storeNow();
    const skewMs = client.maxClockSkewMs;
    const members = liveMembers(records, prefix, storeNow, skewMs);
    this.host.loads.absorb(liveMemberRecords(records, prefix, storeNow, skewMs));
    // Members that died (their record expired rather than being released on stop).
    const generation = generationKey(prefix);
    this.host.takeovers.membersExpired(
      records.filter(
        (r) =>
          r.resource !== generation &&
          r.owner !== '' &&
          r.expiresAt > 0 &&
          !isLive(r, storeNow, skewMs),
      ),
    );
    if (!members.some((m) => m.id === owner))
      members.push({
        id: owner,
        limit: maxLeases,
        ...(capacity === 1 ? {} : { capacity }),
        ...(layout ? { buckets: layout.buckets } : {}),
      });
    this.host.timers.armMembers(records, owner);
    return members;
  }

  private observe(lease: HeldLease): void {
    this.storeOffset = lease.expiresAt - lease.ttlMs - this.host.clock.now();
  }

  private async pollGeneration(): Promise<void> {
    if (this.host.reconciling() || this.host.stopping()) return;
    if (await this.view.moved().catch(() => false)) this.host.changed();
  }

  /**
   * Publishes this worker's load reports in its membership record when one moved by more than the
   * tolerance (at most once per membership renewal), then announces it so peers read it.
   */
  private async publishLoads(): Promise<void> {
    const member = this.member;
    if (!member || member.isTerminal || this.publishing || this.host.stopping()) return;
    const next = this.host.loads.toPublish(this.host.held().map((lease) => lease.resource));
    if (next === undefined) return;
    this.publishing = true;
    try {
      await member.writeData(next.text);
      this.host.loads.published(next.loads, next.under, next.standing);
      // The load and fair load alone are for the dashboard: peers read them with their next scan.
      if (!next.news) return;
      this.host.changed();
      await this.view.announce(1);
    } catch {
      // Tried again at the next renewal: what was not written is still news then.
    } finally {
      this.publishing = false;
    }
  }
}
