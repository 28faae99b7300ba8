import { checkRecords } from '../../src/cli/harness/checker.js';
import type { BeliefRecord } from '../../src/cli/harness/history-format.js';
import { violationLines } from '../../src/cli/harness/violation-lines.js';

/** A time a holder believed it held `resource` with `token`, on one monotonic clock. */
export interface Tenure {
  resource: string;
  owner: string;
  token: number;
  start: number;
  end: number;
  /** How it ended (`released`, `abandoned`, ...), when known. */
  how?: string;
}

/** What demo and verify's checker finds in a list of tenures. */
export interface Verdict {
  /** Two owners of one resource at once, and tokens that do not rise from holder to holder. */
  violations: string[];
  /** Times a resource passed from one owner to another. */
  handovers: number;
  /** The most owners of one name (a counting lease's permits together) believing at one instant. */
  mostOwners: number;
}

/** Checks tenures with the checker demo and verify use, as beliefs of a history. */
export function checkTenures(tenures: readonly Tenure[]): Verdict {
  const beliefs = tenures.map((t): BeliefRecord => ({
    type: 'belief',
    resource: t.resource,
    owner: t.owner,
    token: t.token,
    from: t.start,
    to: t.end,
    how: t.how ?? 'released',
  }));
  const result = checkRecords(beliefs);
  return {
    violations: violationLines(result),
    handovers: result.handovers,
    mostOwners: result.mostOwners,
  };
}

/** Overlapping tenures of one resource, and tokens that do not rise with each new tenure. */
export function violations(tenures: readonly Tenure[]): string[] {
  return checkTenures(tenures).violations;
}
