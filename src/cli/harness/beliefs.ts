import { ceilUs, floorUs } from './host-clock.js';
import type { BeliefRecord } from './history-format.js';
import type { LeaseEvent } from './worker-protocol.js';

interface Open {
  resource: string;
  owner: string;
  token: number;
  from: number;
  /** The holder's latest deadline, on the host clock. */
  until: number;
  read?: { token: number; n: number } | null;
  ended?: number;
  how?: string;
}

/**
 * Turns the workers' reports into belief intervals. A belief runs from the instant the lease
 * reached the holder's code until the earlier of: the release about to leave, and the holder's own
 * deadline (`validUntil`, the very number its `isValid()` compares the same clock against). A
 * holder that noticed a loss late (its loop was blocked) stopped at its deadline all the same; one
 * that died without a word believed at most until the last deadline it reported.
 */
export class Beliefs {
  private readonly open = new Map<string, Open>();

  record(event: LeaseEvent): void {
    const key = `${event.w}\u0000${event.resource}\u0000${event.token}`;
    const belief = this.open.get(key);
    switch (event.e) {
      case 'acquired':
        this.open.set(key, {
          resource: event.resource,
          owner: event.w,
          token: event.token,
          from: event.at,
          until: event.until,
          ...(event.read === undefined ? {} : { read: event.read }),
        });
        return;
      case 'renewed':
        if (belief) belief.until = Math.max(belief.until, event.until);
        return;
      case 'released':
      case 'lost':
        if (belief && belief.ended === undefined) {
          belief.ended = event.at;
          belief.until = Math.max(belief.until, event.until);
          belief.how = event.e;
        }
        return;
      default:
        return;
    }
  }

  /** Whether the holder of this lease has not yet said it stopped believing. */
  isOpen(w: string, resource: string, token: number): boolean {
    const belief = this.open.get(`${w}\u0000${resource}\u0000${token}`);
    return belief !== undefined && belief.ended === undefined;
  }

  records(): BeliefRecord[] {
    return [...this.open.values()].map((b) => {
      const ended = b.ended ?? Infinity;
      const how = b.how === undefined ? 'died' : ended <= b.until ? b.how : 'deadline';
      return {
        type: 'belief',
        resource: b.resource,
        owner: b.owner,
        token: b.token,
        from: floorUs(b.from),
        to: ceilUs(Math.min(ended, b.until)),
        how,
        ...(b.read === undefined ? {} : { read: b.read }),
      };
    });
  }
}
