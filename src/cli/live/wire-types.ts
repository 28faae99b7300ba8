import type { LeaseState } from './lease-state.js';

// Types only, on purpose: the dashboard's server (cli/dashboard/) sends these and its page
// (cli/dashboard/page/) reads them, and the page may import nothing but pure modules of cli/live
// and core. What the page reads of the other messages it declares itself, as a subset of the
// server's types (page/messages.ts).

/**
 * A record as the page gets it: `[resource, owner, token, expiresAt, ttlEstimateMs, state, data]`,
 * an array to keep 10,000 of them small. `state` is the server's judgement at `serverNow`; the page
 * re-judges with the same rule as time passes. `data` is the lease data as the terminal shows it
 * (escaped, cut at 80 characters), or `null`.
 */
export type WireRecord = [string, string, number, number, number, LeaseState, string | null];

/** One live member of a fleet group, as the dashboard's fleet panel shows it. */
export interface FleetMember {
  readonly id: string;
  readonly group: string;
  /** The member's `maxLeases`, or `null` when unlimited. */
  readonly limit: number | null;
  /** Live leases it holds (outside `leasehold/`). */
  readonly leases: number;
  /** What `LeaseManager` would give it of the live leases seen. */
  readonly fairShare: number;
  /**
   * When its group balances by weight: its load and fair load as it last published them in its
   * membership record (three significant digits, published when one moved by more than the
   * tolerance, at most every fourth renewal), and whether it said it is below its band.
   */
  readonly weighed?: { readonly load: number; readonly fair: number; readonly below: boolean };
}

/** The fleet as the records show it (see `fleetView`). */
export interface FleetView {
  readonly members: readonly FleetMember[];
  /** Owners of live leases that are no live member of any group (a CLI `acquire`, a `LeaseClient`). */
  readonly others: readonly { readonly id: string; readonly leases: number }[];
  /** Live leases outside `leasehold/`. */
  readonly leases: number;
}
