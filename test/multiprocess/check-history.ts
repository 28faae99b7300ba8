import {
  checkHistory as check,
  type Tenure as HeldTenure,
} from '../../src/cli/demo/check-history.js';

/** A tenure as the race worker prints it, one JSON line each. */
export type Tenure = HeldTenure & { kind: 'tenure' };

export interface Verdict {
  violations: string[];
  handovers: number;
}

/** The demo's checker, its two kinds of violation in one list. */
export function checkHistory(tenures: readonly Tenure[]): Verdict {
  const { overlaps, tokenOrder, handovers } = check(tenures);
  return { violations: [...overlaps, ...tokenOrder], handovers };
}
