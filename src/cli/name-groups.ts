import type { RecordView } from './format.js';
import { arrange, isFairLine, parseKey, type Arranged } from './record-key.js';

/** A record view as `list` and `get` show it, arranged with the rest of its name. */
export type ShownView = Arranged<RecordView>;

/**
 * Arranges the views of whole names (see `arrange`), leaving out the records around a lease (fair
 * line, election candidates) unless `fairLine`. `hidden` counts what was left out, `candidates`
 * how many of those were candidates' registrations.
 */
export function arrangeViews(
  views: readonly RecordView[],
  fairLine: boolean,
): { shown: ShownView[]; hidden: number; candidates: number } {
  const all = arrange(views, (v) => v.state === 'held');
  const shown = fairLine ? all : all.filter((row) => !isFairLine(row.key));
  const candidates = fairLine ? 0 : all.filter((row) => row.key.part.kind === 'candidate').length;
  return { shown, hidden: all.length - shown.length, candidates };
}

/**
 * Turns pages of records in store order into whole names: a name's records (its own, its permits,
 * its fair line) sort together in the store, since the marks after the name start with U+0001, so
 * a name is complete once a record of another name follows it. The last name of a page is kept
 * until the next page or `end`.
 */
export class NameGroups {
  private pending: RecordView[] = [];
  private pendingName: string | undefined;
  hidden = 0;
  /** Of `hidden`, the election candidates' registrations. */
  candidates = 0;

  constructor(private readonly fairLine: boolean) {}

  /** Takes a page; returns the names it completed, arranged. */
  page(views: readonly RecordView[]): ShownView[] {
    const done: RecordView[] = [];
    for (const view of views) {
      const { name } = parseKey(view.resource);
      if (name !== this.pendingName) {
        done.push(...this.pending);
        this.pending = [];
        this.pendingName = name;
      }
      this.pending.push(view);
    }
    return this.take(done);
  }

  /** The last name, arranged. */
  end(): ShownView[] {
    const rest = this.pending;
    this.pending = [];
    this.pendingName = undefined;
    return this.take(rest);
  }

  private take(views: RecordView[]): ShownView[] {
    const { shown, hidden, candidates } = arrangeViews(views, this.fairLine);
    this.hidden += hidden;
    this.candidates += candidates;
    return shown;
  }
}
