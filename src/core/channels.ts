import { channel } from 'node:diagnostics_channel';
import { STORE_FINDING_CHANNEL } from './setup-report.js';
export type { StoreFindingMessage } from './setup-report.js';

/**
 * The `node:diagnostics_channel` names leasehold publishes on. Subscribe with
 * `diagnostics_channel.subscribe(LeaseholdChannel.leaseLost, (message) => …)`; each channel's
 * message shape is the type named beside it. Nothing is built or published while a channel has
 * no subscriber.
 */
export const LeaseholdChannel = {
  /** A `LeaseClient` was granted a lease: {@link LeaseAcquiredMessage}. */
  leaseAcquired: 'leasehold:lease:acquired',
  /** A renewal of a held lease landed: {@link LeaseRenewedMessage}. */
  leaseRenewed: 'leasehold:lease:renewed',
  /** A held lease turned at-risk: {@link LeaseAtRiskMessage}. */
  leaseAtRisk: 'leasehold:lease:at-risk',
  /** A held lease was lost and its signal aborted: {@link LeaseLostMessage}. */
  leaseLost: 'leasehold:lease:lost',
  /** A held lease was given up: {@link LeaseReleasedMessage}. */
  leaseReleased: 'leasehold:lease:released',
  /** One resource's acquire attempt ended, whatever the result: {@link AcquireAttemptMessage}. */
  acquireAttempt: 'leasehold:acquire:attempt',
  /** A store call of a `LeaseClient` failed or got no answer in time: {@link StoreErrorMessage}. */
  storeError: 'leasehold:store:error',
  /** A `LeaseManager` handed a lease over to its fleet: {@link FleetHandoffMessage}. */
  fleetHandoff: 'leasehold:fleet:handoff',
  /** A `LeaseManager` took over a lease whose holder let it expire: {@link FleetTakeoverMessage}. */
  fleetTakeover: 'leasehold:fleet:takeover',
  /** A `LeaseManager` finished a reconcile pass: its load against its fair one: {@link FleetLoadMessage}. */
  fleetLoad: 'leasehold:fleet:load',
  /**
   * What `leasehold doctor` finds in a store's setup, published once per store when a
   * `LeaseClient` (or manager) is made on it: {@link StoreFindingMessage}.
   */
  storeFinding: STORE_FINDING_CHANNEL,
} as const;

/** One of the {@link LeaseholdChannel} names. */
export type LeaseholdChannelName = (typeof LeaseholdChannel)[keyof typeof LeaseholdChannel];

/** Why a held lease was lost. */
export type LeaseLossCause =
  /** The store no longer shows the lease as this holder's (it expired and was taken, or was released). */
  | 'taken'
  /** Its validity deadline passed without a successful renewal, while renewals were not failing. */
  | 'expired'
  /** Its validity deadline passed while renewals were failing or getting no answer. */
  | 'store-error';

/**
 * How one resource's acquire attempt ended: `acquired`; `held-by-other` (a live holder stood in
 * the way); `too-late` (granted, but the answer came after its validity deadline, or while the
 * client was closing, so it was given back at once); `error` (the store call failed).
 */
export type AcquireResult = 'acquired' | 'held-by-other' | 'too-late' | 'error';

/** The store calls a `LeaseClient` makes, as named in {@link StoreErrorMessage}. */
export type StoreOperation =
  | 'tryAcquire'
  | 'acquireMany'
  | 'acquireAll'
  | 'acquireFirst'
  | 'writeData'
  | 'renew'
  | 'renewMany'
  | 'release'
  | 'releaseMany';

/** What every lease message carries: the grant it is about. */
export interface LeaseMessage {
  /** The owner of the lease (the client's or manager's `owner`). */
  readonly owner: string;
  /** The resource the lease is on. */
  readonly resource: string;
  /** The fencing token of the grant. */
  readonly token: number;
}

/** Published on `leasehold:lease:acquired`. */
export interface LeaseAcquiredMessage extends LeaseMessage {
  /** The TTL, in ms, the lease was granted with. */
  readonly ttlMs: number;
  /** When the record lapses unless renewed, in ms since the epoch on the store's time. */
  readonly expiresAt: number;
}

/** Published on `leasehold:lease:renewed`, once per lease renewed (a batch renewal gives one per lease). */
export interface LeaseRenewedMessage extends LeaseMessage {
  /** The new expiry, in ms since the epoch on the store's time. */
  readonly expiresAt: number;
  /** How long the renewal took, in ms: from when its request was sent to when the answer came. */
  readonly durationMs: number;
}

/** Published on `leasehold:lease:at-risk`, each time a held lease turns at-risk. */
export interface LeaseAtRiskMessage extends LeaseMessage {
  /** Why: renewals failing, or less than a third of the validity window left. */
  readonly reason: string;
  /** Ms of validity left when it turned at-risk. */
  readonly remainingMs: number;
}

/** Published on `leasehold:lease:lost`. */
export interface LeaseLostMessage extends LeaseMessage {
  /** Why it was lost. */
  readonly cause: LeaseLossCause;
  /** The message of the `LEASE_LOST` error the lease's signal aborted with. */
  readonly message: string;
}

/** Published on `leasehold:lease:released`: the lease was given up (release, close, handoff, a late grant). */
export interface LeaseReleasedMessage extends LeaseMessage {
  /** How long, in ms, this client held the lease. */
  readonly heldMs: number;
}

/** Published on `leasehold:acquire:attempt`, once per resource tried (a batch gives one per resource). */
export interface AcquireAttemptMessage {
  /** The owner that tried. */
  readonly owner: string;
  /** The resource tried. */
  readonly resource: string;
  /** How the attempt ended. */
  readonly result: AcquireResult;
  /** How long the store call took, in ms. */
  readonly durationMs: number;
  /** The token granted, when `result` is `acquired` or `too-late`. */
  readonly token?: number;
  /** The error code (a `LeaseError` code, or `UNKNOWN`), when `result` is `error`. */
  readonly code?: string;
}

/** Published on `leasehold:store:error`, once per failed store call. */
export interface StoreErrorMessage {
  /** The owner whose call failed. */
  readonly owner: string;
  /** Which store call failed. */
  readonly operation: StoreOperation;
  /**
   * The `LeaseError` code (`STORE_UNAVAILABLE` for a call with no answer in time), or `UNKNOWN`
   * for an error that is not a `LeaseError`.
   */
  readonly code: string;
  /** The error's message, with any URL password hidden. */
  readonly message: string;
  /** How many leases or resources the call was about. */
  readonly count: number;
}

/** Published on `leasehold:fleet:handoff`, once per lease, after its release has landed. */
export interface FleetHandoffMessage extends LeaseMessage {
  /** The fleet (the manager's `group`). */
  readonly group: string;
  /** `balance`: given to a less loaded worker; `unwanted`: no longer among the wanted resources. */
  readonly reason: 'balance' | 'unwanted';
  /** How long the handoff took, in ms: from aborting the lease's work to its release landing. */
  readonly durationMs: number;
}

/**
 * Published on `leasehold:fleet:takeover` when a manager acquires a resource it last saw held by
 * another owner, after that owner's record had expired (a crashed, partitioned or frozen worker).
 */
export interface FleetTakeoverMessage extends LeaseMessage {
  /** The fleet (the manager's `group`). */
  readonly group: string;
  /** The owner whose record expired. */
  readonly previousOwner: string;
  /** The token of the expired grant, when its record was seen (see `latencyMs`). */
  readonly previousToken?: number;
  /**
   * How long the resource went unowned, in ms on the store's time: from the expired claim to the
   * new grant (so it includes the skew allowance contenders wait). The claim's expiry is the one
   * on the resource's record when the manager saw it (a refused acquire, a scan for free
   * resources); for a resource taken straight after its holder's membership expired, it is the
   * expiry of that membership record, which the holder renewed in the same batch as its leases.
   */
  readonly latencyMs: number;
}

/**
 * Published by a `LeaseManager` after each reconcile pass: what it carries against what it should,
 * as `loadStatus()` reports them, so a fleet's balance can be graphed per worker.
 */
export interface FleetLoadMessage {
  /** The fleet (the manager's `group`). */
  readonly group: string;
  /** The manager's owner id. */
  readonly owner: string;
  /** What it holds: the total weight of its leases when the fleet weighs them, else their count. */
  readonly load: number;
  /** Its fair load: the fleet's total weight split by capacity, or its share of the count. */
  readonly fair: number;
  /** Whether the fleet balances by weight rather than by count. */
  readonly weighted: boolean;
  /** The live members it sees, itself included; 0 once the manager stopped (its load is gone). */
  readonly members: number;
}

/** @internal The channel objects, made once; `hasSubscribers` is checked before building a message. */
export const channels = {
  leaseAcquired: channel(LeaseholdChannel.leaseAcquired),
  leaseRenewed: channel(LeaseholdChannel.leaseRenewed),
  leaseAtRisk: channel(LeaseholdChannel.leaseAtRisk),
  leaseLost: channel(LeaseholdChannel.leaseLost),
  leaseReleased: channel(LeaseholdChannel.leaseReleased),
  acquireAttempt: channel(LeaseholdChannel.acquireAttempt),
  storeError: channel(LeaseholdChannel.storeError),
  fleetHandoff: channel(LeaseholdChannel.fleetHandoff),
  fleetTakeover: channel(LeaseholdChannel.fleetTakeover),
  fleetLoad: channel(LeaseholdChannel.fleetLoad),
};
