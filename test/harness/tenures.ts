/** A time a holder believed it held `resource` with `token`, on this process's monotonic clock. */
export interface Tenure {
  readonly resource: string;
  readonly owner: string;
  readonly token: number;
  readonly start: number;
  readonly end: number;
}

/** Overlapping tenures of one resource, and tokens that do not rise with each new tenure. */
export function violations(tenures: readonly Tenure[]): string[] {
  const out: string[] = [];
  const byResource = new Map<string, Tenure[]>();
  for (const t of tenures) byResource.set(t.resource, [...(byResource.get(t.resource) ?? []), t]);
  for (const [resource, list] of byResource) {
    const sorted = [...list].sort((a, b) => a.start - b.start);
    for (let i = 1; i < sorted.length; i++) {
      const [prev, next] = [sorted[i - 1]!, sorted[i]!];
      if (next.start < prev.end) {
        out.push(
          `${resource}: ${next.owner} (token ${next.token}) began before ${prev.owner} (token ${prev.token}) ended`,
        );
      }
      if (next.token <= prev.token) {
        out.push(`${resource}: token ${next.token} of ${next.owner} after ${prev.token}`);
      }
    }
  }
  return out;
}
