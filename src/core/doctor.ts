import { ErrorCode, LeaseError } from './errors.js';
import type { LeaseStore } from './store.js';
import type { Diagnosis, Finding, FindingLevel } from './diagnosis.js';

export { FindingLevel, type Diagnosis, type Finding } from './diagnosis.js';

/** Options of `diagnoseStore`. */
export interface DiagnoseOptions {
  /**
   * Finding ids to leave out (known and accepted): `['postgres.fsync-off']`. An id that no store
   * reports is refused with `INVALID_ARGUMENT`, so a misspelt one never silences nothing quietly.
   */
  readonly ignore?: readonly string[];
}

const ORDER: Record<FindingLevel, number> = { unsafe: 0, warning: 1, unknown: 2 };

/** Every finding id a built-in store can report, for checking `ignore` lists. */
export const FINDING_IDS = new Set<string>();

/** Declares the ids a store can report (each store's doctor module calls it once, at load). */
export function findingIds(...ids: string[]): void {
  for (const id of ids) FINDING_IDS.add(id);
}

/** A finding, checked for an id of the declared form. */
export function finding(
  id: string,
  level: FindingLevel,
  observed: string,
  risk: string,
  fix: string,
): Finding {
  if (!FINDING_IDS.has(id)) throw new Error(`finding id ${id} was not declared with findingIds()`);
  return Object.freeze({ id, level, observed, risk, fix });
}

/**
 * Asks `store` what in its setup can lose acknowledged leases: the findings (most serious first,
 * minus `ignore`) and what was read. `NOT_SUPPORTED` for a store that cannot tell (a custom
 * `LeaseStore` without `diagnose`).
 */
export async function diagnoseStore(
  store: LeaseStore,
  options: DiagnoseOptions = {},
): Promise<Diagnosis> {
  const ignore = checkIgnore(options.ignore);
  if (typeof store.diagnose !== 'function') {
    throw new LeaseError(
      ErrorCode.NOT_SUPPORTED,
      'this store cannot report its setup (it has no diagnose()); check its durability and replication settings by hand against docs/verify-and-doctor.md',
    );
  }
  const { findings, checked } = await store.diagnose();
  const kept = findings
    .filter((f) => !ignore.has(f.id))
    .sort((a, b) => ORDER[a.level] - ORDER[b.level] || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { findings: kept, checked };
}

/** Checks an `ignore` list (see `DiagnoseOptions`): the ids as a set, or `INVALID_ARGUMENT`. */
export function checkIgnore(ignore: unknown): Set<string> {
  if (ignore === undefined) return new Set();
  if (!Array.isArray(ignore) || ignore.some((id) => typeof id !== 'string'))
    throw new LeaseError(ErrorCode.INVALID_ARGUMENT, 'ignore must be an array of finding ids');
  const unknown = (ignore as string[]).filter((id) => !FINDING_IDS.has(id));
  if (unknown.length > 0)
    throw new LeaseError(
      ErrorCode.INVALID_ARGUMENT,
      `ignore names no finding a store reports: ${unknown.join(', ')} (known: ${[...FINDING_IDS].sort().join(', ')})`,
    );
  return new Set(ignore as string[]);
}

/** The most serious level among `findings`, or `undefined` when there are none. */
export function worstLevel(findings: readonly Finding[]): FindingLevel | undefined {
  let worst: FindingLevel | undefined;
  for (const f of findings)
    if (worst === undefined || ORDER[f.level] < ORDER[worst]) worst = f.level;
  return worst;
}
