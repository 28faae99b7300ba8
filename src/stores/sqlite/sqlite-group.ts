import { ErrorCode, LeaseError } from '../../core/errors.js';
import { GroupCommit, MemberFailure, thisTurn, type GroupReply } from '../../core/group-commit.js';
import type { Transaction } from './sqlite-driver.js';
import { URGENT } from './sqlite-runner.js';

/** The single-lease operations that may share a transaction. */
export type GroupedOperation = 'tryAcquire' | 'acquireFirst' | 'renew' | 'release' | 'writeData';

export interface GroupMember {
  readonly operation: GroupedOperation;
  /** The member's statement, run inside the group's transaction; its result is the member's. */
  readonly apply: () => unknown;
}

/**
 * Runs a step (one transaction) the way the store's runner does: in turn, waiting out locks. It
 * never throws: every failure, the file found gone included, is a rejection.
 */
export type RunStep = <T>(label: string, urgent: boolean, attempt: () => T) => Promise<T>;

/**
 * Group commit for single-lease transitions. With `synchronous=FULL` each commit is an fsync of the
 * log, so many callers transitioning one lease each cost one fsync apiece. The calls asked for in
 * one run of the microtask queue (callers resumed by the same event answer and ask again before
 * it drains) are applied in one IMMEDIATE transaction instead, each statement exactly as it would
 * run alone, in the order asked: one lock and one commit for all of them. A lone call is its one
 * statement in autocommit; it waits for nothing but the microtasks already queued.
 *
 * A failure inside the transaction rolls all of it back, so every member of that group fails with
 * the same error and none of them took effect: the same outcome as each failing alone. The one
 * exception is a member's own `RECORD_INVALID` (an acquire refused a record leasehold did not
 * write; its statement failed alone and wrote nothing): that member fails with it, the others go on.
 */
export class TransitionGroup {
  private readonly group: GroupCommit<GroupMember, unknown>;

  constructor(
    private readonly runStep: RunStep,
    /** Applies each member in one transaction; better-sqlite3's `db.transaction`. */
    private readonly applyAll: Transaction<(members: readonly GroupMember[]) => unknown[]>,
    /** Members per transaction at most, so one step holds the event loop briefly. */
    maxMembers: number,
  ) {
    this.group = new GroupCommit({
      schedule: thisTurn,
      limit: { size: () => 1, fits: (count) => count <= maxMembers },
      send: (members, reply) => this.send(members, reply),
    });
  }

  add<T>(operation: GroupedOperation, apply: () => T): Promise<T> {
    return this.group.run({ operation, apply }) as Promise<T>;
  }

  private send(members: readonly GroupMember[], reply: GroupReply<unknown>): void {
    if (members.length === 1) {
      // One statement alone runs in autocommit: measured here, an explicit BEGIN IMMEDIATE …
      // COMMIT around one statement costs about 200 µs more CPU per acquire-release cycle than the
      // statement on its own, for the same single commit. Its result is read to its end, so its
      // commit's failure is thrown (see SqliteTransitions.grant).
      const { operation, apply } = members[0]!;
      this.runStep(operation, URGENT.has(operation), apply).then(
        (result) => reply.answer([result]),
        reply.fail,
      );
      return;
    }
    const operations = [...new Set(members.map((m) => m.operation))];
    const urgent = operations.some((op) => URGENT.has(op));
    this.runStep(operations.join('/'), urgent, () => this.applyAll.immediate(members)).then(
      reply.answer,
      reply.fail,
    );
  }
}

/**
 * The transaction body for `TransitionGroup`: each member's statement, in order. A member's
 * `RECORD_INVALID` is its own (see `TransitionGroup`); any other failure rolls back the group.
 */
export function applyEach(members: readonly { apply: () => unknown }[]): unknown[] {
  return members.map((m) => {
    try {
      return m.apply();
    } catch (error) {
      if (error instanceof LeaseError && error.code === ErrorCode.RECORD_INVALID)
        return new MemberFailure(error);
      throw error;
    }
  });
}
