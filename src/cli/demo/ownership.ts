import type { LeaseEvent } from '../harness/worker-protocol.js';

export interface Owner {
  w: string;
  token: number;
}

/**
 * Who owns what, as the workers report it: the newest token acquired for each resource, until its
 * holder says it released or lost it. `changedAt` is when ownership last moved.
 */
export class Ownership {
  readonly owners = new Map<string, Owner>();
  changedAt = 0;

  constructor(readonly resources: readonly string[]) {}

  apply(event: LeaseEvent): void {
    const current = this.owners.get(event.resource);
    switch (event.e) {
      case 'acquired':
        if (!current || event.token > current.token) {
          this.owners.set(event.resource, { w: event.w, token: event.token });
          this.changedAt = Math.max(this.changedAt, event.at);
        }
        return;
      case 'released':
      case 'lost':
        if (current && current.w === event.w && current.token === event.token) {
          this.owners.delete(event.resource);
          this.changedAt = Math.max(this.changedAt, event.at);
        }
        return;
      default:
        return;
    }
  }

  heldBy(w: string): string[] {
    return this.resources.filter((r) => this.owners.get(r)?.w === w);
  }

  /** Leases held per worker among `live`. */
  counts(live: readonly string[]): Map<string, number> {
    const counts = new Map(live.map((w) => [w, 0]));
    for (const owner of this.owners.values()) {
      const n = counts.get(owner.w);
      if (n !== undefined) counts.set(owner.w, n + 1);
    }
    return counts;
  }

  /** Every resource owned by one of `live`, and every live worker within one of an even share. */
  settled(live: readonly string[]): boolean {
    if (live.length === 0) return false;
    const counts = this.counts(live);
    let owned = 0;
    for (const n of counts.values()) owned += n;
    if (owned !== this.resources.length) return false;
    const floor = Math.floor(this.resources.length / live.length);
    const ceil = Math.ceil(this.resources.length / live.length);
    return [...counts.values()].every((n) => n >= floor && n <= ceil);
  }
}
