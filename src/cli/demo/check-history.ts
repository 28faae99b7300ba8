/** One holder's belief in one lease: from the acquire reply until release was sent, loss noticed, or the deadline. */
export interface Tenure {
  resource: string;
  owner: string;
  token: number;
  /** Wall time (ms, sub-ms precision) the acquire reply arrived. */
  start: number;
  /** Wall time the holder stopped believing. */
  end: number;
  /** How it ended: `released`, `lost`, `abandoned` (the holder died or never said), ... */
  how: string;
}

export interface Verdict {
  /** Two live owners of one resource at once; empty when safe. */
  overlaps: string[];
  /** A tenure whose token is not above the one before it; empty when safe. */
  tokenOrder: string[];
  /** Times a resource passed from one tenure to the next. */
  handovers: number;
}

/**
 * The safety check: per resource, tenures ordered by start must not overlap any earlier one, and
 * their tokens must rise strictly in that order.
 */
export function checkHistory(tenures: readonly Tenure[]): Verdict {
  const byResource = new Map<string, Tenure[]>();
  for (const t of tenures) {
    const list = byResource.get(t.resource);
    if (list) list.push(t);
    else byResource.set(t.resource, [t]);
  }
  const overlaps: string[] = [];
  const tokenOrder: string[] = [];
  let handovers = 0;
  for (const [resource, list] of byResource) {
    list.sort((a, b) => a.start - b.start);
    // The tenure that ends last so far: a later one must start after it, not only after its neighbour.
    let latest = list[0]!;
    for (let i = 1; i < list.length; i++) {
      const prev = list[i - 1]!;
      const next = list[i]!;
      handovers++;
      if (next.start < latest.end) {
        overlaps.push(
          `${resource}: ${next.owner} (token ${next.token}) started ${(latest.end - next.start).toFixed(3)} ms before ${latest.owner} (token ${latest.token}) stopped`,
        );
      }
      if (next.token <= prev.token)
        tokenOrder.push(
          `${resource}: token ${next.token} of ${next.owner} follows token ${prev.token}`,
        );
      if (next.end > latest.end) latest = next;
    }
  }
  return { overlaps, tokenOrder, handovers };
}
