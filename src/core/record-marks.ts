/**
 * The marks that make one record key stand for a part of a name's lease: each starts with U+0001,
 * the smallest character a name may hold, so the records of a name sort right after it and one
 * `list` page starting at the name reads them all. The client and the fleet write them; the CLI
 * and the dashboard page read them back (no imports here, so the page's browser bundle can too).
 */

/**
 * Permit i > 0 of a counting lease named `name` is the record `name` + `PERMIT_MARK` + i; permit 0
 * is the record `name` itself.
 */
export const PERMIT_MARK = '\u0001permit=';

/** A place in the fair line of `name`: `name` + this + a three-digit slot. */
export const QUEUE_MARK = '\u0001queue=';

/** The record whose fencing token numbers the arrivals on `name`: `name` + this. */
export const TICKET_MARK = '\u0001ticket';

/**
 * Between the election's resource and a candidate's registration:
 * `<resource>\u0001candidate=<priority>:<owner>`.
 */
export const CANDIDATE_MARK = '\u0001candidate=';
