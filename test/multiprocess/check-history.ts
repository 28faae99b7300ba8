/** One holder's belief in one lease: from the acquire reply until release was sent or the deadline. */
export interface Tenure {
  kind: 'tenure';
  resource: string;
  owner: string;
  token: number;
  /** Wall time (ms, sub-ms precision) the acquire reply arrived. */
  start: number;
  /** Wall time the holder stopped believing: release sent, or its validity deadline. */
  end: number;
  how: string;
}

export interface Verdict {
  violations: string[];
  /** Times a resource passed from one tenure to the next. */
  handovers: number;
}

/**
 * The safety check: per resource, tenures ordered by start must not overlap, and their
 * tokens must rise strictly in that order.
 */
export function checkHistory(tenures: readonly Tenure[]): Verdict {
  const byResource = new Map<string, Tenure[]>();
  for (const t of tenures) byResource.set(t.resource, [...(byResource.get(t.resource) ?? []), t]);
  const violations: string[] = [];
  let handovers = 0;
  for (const [resource, list] of byResource) {
    list.sort((a, b) => a.start - b.start);
    for (let i = 1; i < list.length; i++) {
      const prev = list[i - 1]!;
      const next = list[i]!;
      handovers++;
      if (next.start < prev.end) {
        violations.push(
          `${resource}: ${next.owner} (token ${next.token}) started ${(prev.end - next.start).toFixed(3)} ms before ${prev.owner} (token ${prev.token}) stopped`,
        );
      }
      if (next.token <= prev.token)
        violations.push(
          `${resource}: token ${next.token} of ${next.owner} follows token ${prev.token}`,
        );
    }
  }
  return { violations, handovers };
}
