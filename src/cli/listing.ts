import { once } from 'node:events';
import { expiresText } from './format.js';
import type { ShownView } from './name-groups.js';

/** Where `leasehold list` writes its records, a few whole names at a time. */
export interface Listing {
  page(rows: readonly ShownView[]): Promise<void>;
  /** After the last page; `more` when records past `--limit` were left out. */
  end(more: boolean): Promise<void>;
}

/** Writes to stdout, waiting while its buffer is full, so a long listing is never held in memory. */
async function write(text: string): Promise<void> {
  if (!process.stdout.write(text)) await once(process.stdout, 'drain');
}

const HEADERS = ['RESOURCE', 'OWNER', 'TOKEN', 'STATE', 'EXPIRES'];
const NUMERIC = 2;

/**
 * The table, written page by page. Columns are as wide as the widest cell seen so far: a later
 * page with a longer resource name shifts its own columns right, never earlier lines.
 */
export class TableListing implements Listing {
  private widths = HEADERS.map((h) => h.length);
  private rows = 0;

  constructor(
    private readonly empty: string,
    private readonly note: string | undefined,
  ) {}

  async page(shown: readonly ShownView[]): Promise<void> {
    const rows = shown.map(({ item: v, label, owner }) => [
      label,
      v.owner ? owner : '-',
      String(v.token),
      v.state,
      expiresText(v),
    ]);
    for (const row of rows) this.widths = this.widths.map((w, i) => Math.max(w, row[i]!.length));
    const lines = rows.map((row) => this.line(row));
    if (this.rows === 0 && rows.length > 0) lines.unshift(this.line(HEADERS));
    this.rows += rows.length;
    if (lines.length > 0) await write(`${lines.join('\n')}\n`);
  }

  async end(): Promise<void> {
    if (this.rows === 0) await write(`${this.empty}\n`);
    else if (this.note) await write(`${this.note}\n`);
  }

  private line(cells: string[]): string {
    return cells
      .map((cell, i) =>
        i === NUMERIC ? cell.padStart(this.widths[i]!) : cell.padEnd(this.widths[i]!),
      )
      .join('  ')
      .trimEnd();
  }
}

/**
 * One JSON document, `{ clock, checkedAt, leases: [...], more }`, written as the pages come: the
 * same text `JSON.stringify(document, null, 2)` gives, without holding the array.
 */
export class JsonListing implements Listing {
  private count = 0;
  private started = false;

  constructor(
    private readonly clock: string,
    private readonly checkedAt: number,
  ) {}

  async page(rows: readonly ShownView[]): Promise<void> {
    let text = this.start();
    for (const row of rows) {
      const item = JSON.stringify(jsonView(row), null, 2).replace(/^/gm, '    ');
      text += `${this.count++ === 0 ? '\n' : ',\n'}${item}`;
    }
    if (text !== '') await write(text);
  }

  async end(more: boolean): Promise<void> {
    await write(`${this.start()}${this.count === 0 ? ']' : '\n  ]'},\n  "more": ${more}\n}\n`);
  }

  /** The text before the first lease, once. */
  private start(): string {
    if (this.started) return '';
    this.started = true;
    const head = JSON.stringify({ clock: this.clock, checkedAt: this.checkedAt }, null, 2);
    return `${head.slice(0, -2)},\n  "leases": [`;
  }
}

/** A record for `--json` readers: the view, and for a fair-line record what it is in the line. */
export function jsonView(row: ShownView): object {
  return row.fairLine ? { ...row.item, fairLine: row.fairLine } : row.item;
}
