import type { Tenure } from './check-history.js';
import type { LeaseEvent } from './events.js';

interface Belief {
  resource: string;
  owner: string;
  token: number;
  start: number;
  /** The latest validity deadline the holder reported, as wall time. */
  until: number;
  /** When the holder said it stopped believing (release sent, loss noticed). */
  ended?: number;
  how?: string;
}

/**
 * Turns the workers' reports into tenures. A holder's belief runs from the acquire reply until the
 * earliest of: release sent, loss noticed, its validity deadline. A worker that died without a word
 * (SIGKILL) believed at most until the last deadline it reported.
 */
export class History {
  private readonly beliefs = new Map<string, Belief>();

  record(event: LeaseEvent): void {
    const key = `${event.w}\u0000${event.resource}\u0000${event.token}`;
    const belief = this.beliefs.get(key);
    switch (event.e) {
      case 'acquired':
        this.beliefs.set(key, {
          resource: event.resource,
          owner: event.w,
          token: event.token,
          start: event.at,
          until: event.validUntilWall,
        });
        return;
      case 'renewed':
        if (belief) belief.until = Math.max(belief.until, event.validUntilWall);
        return;
      case 'released':
      case 'lost':
        if (belief && belief.ended === undefined) {
          belief.ended = event.at;
          belief.until = Math.max(belief.until, event.validUntilWall);
          belief.how = event.e;
        }
        return;
      default:
        return;
    }
  }

  /** Whether the holder of this lease has not yet said it stopped believing. */
  isOpen(w: string, resource: string, token: number): boolean {
    const belief = this.beliefs.get(`${w}\u0000${resource}\u0000${token}`);
    return belief !== undefined && belief.ended === undefined;
  }

  tenures(): Tenure[] {
    return [...this.beliefs.values()].map((b) => {
      const ended = b.ended ?? Infinity;
      return {
        resource: b.resource,
        owner: b.owner,
        token: b.token,
        start: b.start,
        end: Math.min(ended, b.until),
        how:
          b.how === undefined
            ? 'abandoned'
            : ended <= b.until
              ? b.how
              : `${b.how} after its deadline`,
      };
    });
  }
}
