import { ErrorCode, LeaseError } from './errors.js';

/**
 * The migration steps that take a table from schema version `current` to `target`, where
 * `steps[v]` goes from `v` to `v + 1`: none when it is current. A table newer than this release
 * understands is refused (`STORE_UNAVAILABLE`, not retryable), never written: an older release
 * must not run over a layout it does not know. `what` names the table in the message. Each SQL
 * store reads the version, takes its own lock, calls this and runs the steps and the new version
 * in one transaction, so racing processes migrate once.
 */
export function stepsToRun(
  what: string,
  current: number,
  target: number,
  steps: readonly string[],
): readonly string[] {
  if (current > target) {
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `${what} has schema version ${current}, newer than this leasehold understands (${target}); upgrade leasehold`,
      { retryable: false },
    );
  }
  if (steps.length < target) {
    throw new Error(`${target} migration steps are needed, ${steps.length} are written`);
  }
  return steps.slice(current, target);
}
