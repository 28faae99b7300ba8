/**
 * The tour's "downstream": a resource that remembers the highest fencing token it has seen and
 * rejects any write carrying a lower one (design rule 3), so a paused ex-holder cannot do harm.
 */
export class FencedCounter {
  private highest = 0;
  private accepted = 0;

  /** Applies a write made under lease `token`; `false` when the token is stale. */
  write(token: number): boolean {
    if (token < this.highest) return false;
    this.highest = token;
    this.accepted++;
    return true;
  }

  get highestToken(): number {
    return this.highest;
  }

  get writes(): number {
    return this.accepted;
  }
}
