import type { CheckResult, Overlap, StaleAccepted, TokenOrderViolation } from './checker.js';

/** `r: B (token 2) started 1.000 ms before A (token 1) stopped`. */
export function overlapLine(overlap: Overlap): string {
  const { resource, first, second } = overlap;
  return `${resource}: ${second.owner} (token ${second.token}) started ${(first.to - second.from).toFixed(3)} ms before ${first.owner} (token ${first.token}) stopped`;
}

/** `r: token 2 of C follows token 2`. */
export function tokenOrderLine(violation: TokenOrderViolation): string {
  const { resource, before, after } = violation;
  return `${resource}: token ${after.token} of ${after.owner} follows token ${before.token}`;
}

/** `r: write by worker A under token 1 committed after token 2`. */
export function staleWriteLine(stale: StaleAccepted): string {
  return `${stale.resource}: write by worker ${stale.owner} under token ${stale.token} committed after token ${stale.after}`;
}

/** Every safety violation of a check, one line each: overlaps, token order, stale writes. */
export function violationLines(result: CheckResult): string[] {
  return [
    ...result.overlaps.map(overlapLine),
    ...result.tokenOrder.map(tokenOrderLine),
    ...result.staleAccepted.map(staleWriteLine),
  ];
}
