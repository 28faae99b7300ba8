import { finding, FindingLevel, type Finding } from './doctor.js';

/** How a replicated store names its parts, for `quorumFindings`. */
export interface QuorumWords {
  /** The finding ids for one voter, and for an even count of them. */
  readonly ids: { readonly single: string; readonly even: string };
  /** One voter: `member`, `server`. */
  readonly voter: string;
  /** All of them: `cluster`, `ensemble`. */
  readonly group: string;
  /** What an odd count is of, in the fix: `members`, `voting servers`. */
  readonly oddOf: string;
  /** Said after the fix for an even count (`(observers do not count)`), if anything. */
  readonly evenNote?: string;
}

/** `3 members`, `1 member`. */
export function plural(count: number, noun: string, suffix = 's'): string {
  return `${count} ${noun}${count === 1 ? '' : suffix}`;
}

/**
 * What a consensus store's size means for leases: one voter has no fault tolerance, an even
 * count tolerates no more failures than one voter fewer (both warnings: leases stay exclusive).
 * Nothing for an odd count above one.
 */
export function quorumFindings(voters: number, observed: string, words: QuorumWords): Finding[] {
  const { voter, group } = words;
  if (voters === 1)
    return [
      finding(
        words.ids.single,
        FindingLevel.WARNING,
        observed,
        `no fault tolerance: this one ${voter} holds the only copy of every record and token, so ` +
          'losing its disk loses them all (tokens then start again at 1), and while it is down ' +
          'no lease can be granted or renewed; leases stay exclusive while it runs',
        `run a${group === 'ensemble' ? 'n' : ''} ${group} of 3 (or 5) ${voter}s: a quorum then holds every acknowledged ` +
          `write, and the ${group} outlives the loss of a minority`,
      ),
    ];
  if (voters > 0 && voters % 2 === 0) {
    const quorum = voters / 2 + 1;
    const survives = voters - quorum;
    const odd = voters === 2 ? '3' : `${voters - 1} or ${voters + 1}`;
    return [
      finding(
        words.ids.even,
        FindingLevel.WARNING,
        observed,
        `a quorum is ${quorum} of ${voters}: the ${group} survives ` +
          `${survives === 0 ? `no failed ${voter}` : plural(survives, `failed ${voter}`)}, no more ` +
          `than ${plural(voters - 1, voter)} would, with one more machine that can fail ` +
          `(${voters === 2 ? 'either one failing stops' : 'a partition into two halves stops'} ` +
          'every grant and renewal); leases stay exclusive',
        `run an odd number of ${words.oddOf}: ${odd}${words.evenNote ? ` ${words.evenNote}` : ''}`,
      ),
    ];
  }
  return [];
}
