/**
 * How much a finding matters to the lease rules:
 * - `unsafe`: the setup can lose an acknowledged compare-and-set (on a restart, a crash, a power
 *   loss or a failover), after which a second holder can be granted while the first still
 *   believes, or a token can be handed out again: exclusivity and fencing can break;
 * - `warning`: leases stay exclusive, but something users rely on is weaker than they may think
 *   (no fault tolerance, writes refused, a setting that cannot be read);
 * - `unknown`: the store did not say (a setting hidden from this user, a server that does not
 *   report it): what to check by hand is in `fix`.
 */
export const FindingLevel = {
  /** An acknowledged compare-and-set can be lost: exclusivity and fencing can break. */
  UNSAFE: 'unsafe',
  /** Leases stay exclusive; something else is weaker than it may look. */
  WARNING: 'warning',
  /** The store did not say; check by hand. */
  UNKNOWN: 'unknown',
} as const;

export type FindingLevel = (typeof FindingLevel)[keyof typeof FindingLevel];

/** One thing about a store's setup that the lease rules depend on. */
export interface Finding {
  /** A stable id, `<store>.<what>` (e.g. `redis.no-persistence`): what `ignore` lists name. */
  readonly id: string;
  /** How much it matters: `unsafe`, `warning` or `unknown` (see `FindingLevel`). */
  readonly level: FindingLevel;
  /** What the store reported, in its own words: `appendonly no, save ""`. */
  readonly observed: string;
  /** What can be lost, and on which fault. */
  readonly risk: string;
  /** The setting (or the practice) that removes the finding. */
  readonly fix: string;
}

/** What `diagnoseStore` found, and what it looked at. */
export interface Diagnosis {
  /** The findings, the most serious first. */
  readonly findings: readonly Finding[];
  /** What was read to reach them, in the store's words (settings, views, commands). */
  readonly checked: readonly string[];
}
