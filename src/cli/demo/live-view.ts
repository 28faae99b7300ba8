import { hostNow } from '../harness/host-clock.js';
import type { WorkerProcess } from '../harness/fleet.js';
import type { Monitor } from './monitor.js';

export type ViewMode = 'tty' | 'plain' | 'json';

const COLORS = [36, 33, 35, 32, 34, 91, 96, 93, 95, 92, 94, 31];
const REFRESH_MS = 200;
/** Resources per grid row. */
const ROW = 32;

/**
 * What the demo shows while it runs. On a terminal: progress lines scrolling above a live panel (the
 * phase, a grid of the resources by owner letter, the workers, the write counts) redrawn a few
 * times a second. Elsewhere: the progress lines only. With `--json`: nothing until the report.
 */
export class LiveView {
  private phaseTitle = '';
  private phaseDetail = '';
  private drawn = 0;
  private pending: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly color: boolean;

  constructor(
    readonly mode: ViewMode,
    private readonly monitor: Monitor,
    private readonly workers: ReadonlyMap<string, WorkerProcess>,
    private readonly startedAt: number,
    private readonly out: NodeJS.WriteStream = process.stdout,
  ) {
    this.color = mode === 'tty' && !process.env.NO_COLOR;
  }

  start(): void {
    if (this.mode !== 'tty') return;
    this.out.write('\x1b[?25l');
    this.timer = setInterval(() => this.render(), REFRESH_MS);
  }

  /** Draws the last frame and gives the terminal its cursor back. */
  stop(): void {
    if (this.timer === undefined) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.render();
    this.out.write('\x1b[?25h');
  }

  /** Lines printed once, before the run. */
  header(line: string): void {
    if (this.mode !== 'json') this.out.write(`${line}\n`);
  }

  /** A new phase: a short title and a line that explains it. */
  phase(title: string, detail = ''): void {
    this.phaseTitle = title;
    this.phaseDetail = detail;
    if (this.mode === 'plain') this.say(`== ${title}${detail ? `: ${detail}` : ''}`);
    else this.render();
  }

  say(text: string): void {
    if (this.mode === 'json') return;
    const line = `${formatSeconds(hostNow() - this.startedAt)}  ${text}`;
    if (this.mode === 'plain') this.out.write(`${line}\n`);
    else {
      this.pending.push(line);
      this.render();
    }
  }

  private render(): void {
    if (this.mode !== 'tty') return;
    const frame = this.frame();
    let text = this.drawn > 0 ? `\x1b[${this.drawn}F\x1b[J` : '';
    for (const line of this.pending) text += `${line}\n`;
    this.pending = [];
    text += `${frame.join('\n')}\n`;
    this.drawn = frame.length;
    this.out.write(text);
  }

  /** The panel; every line fits the terminal, so moving the cursor up by the line count redraws it. */
  private frame(): string[] {
    const { ownership, totals } = this.monitor;
    const width = Math.max(40, (this.out.columns ?? 80) - 1);
    const fit = (text: string, room = width): string =>
      text.length <= room ? text : `${text.slice(0, Math.max(0, room - 1))}…`;
    const elapsed = `t+${formatSeconds(hostNow() - this.startedAt).trim()}`;
    const cells = ownership.resources.map((resource) => {
      const owner = ownership.owners.get(resource);
      if (!owner) return this.paint('·', 90);
      const status = this.workers.get(owner.w)?.status;
      if (status === 'running' || status === 'stopping')
        return this.paint(owner.w, colorOf(owner.w));
      return this.paint(owner.w.toLowerCase(), 31);
    });
    const rows: string[] = [];
    for (let i = 0; i < cells.length; i += ROW) {
      const groups: string[] = [];
      for (let j = i; j < Math.min(i + ROW, cells.length); j += 8)
        groups.push(cells.slice(j, Math.min(j + 8, i + ROW, cells.length)).join(''));
      rows.push(groups.join(' '));
    }
    const counts = ownership.counts([...this.workers.keys()]);
    const fleet = [...this.workers.values()].map((w) => {
      const n = counts.get(w.id) ?? 0;
      const label = w.status === 'running' ? `${n}` : `${w.status}${n > 0 ? ` ${n}` : ''}`;
      return {
        plain: `${w.id} ${label}`,
        painted: `${this.paint(w.id, colorOf(w.id))} ${label}`,
      };
    });
    while (fleet.length > 1 && fleet.map((f) => f.plain).join('  ').length + 10 > width)
      fleet.shift();
    const rejected = `${totals.writesRejected} rejected by the fence`;
    return [
      '',
      `  phase   ${this.paint(fit(this.phaseTitle, width - 12 - elapsed.length), 1)}  ${this.paint(elapsed, 90)}`,
      `          ${fit(this.phaseDetail, width - 10)}`,
      ...rows.map((row, i) => `  ${i === 0 ? 'owners' : '      '}  ${row}`),
      `  workers ${fleet.map((f) => f.painted).join('  ')}`,
      `  writes  ${totals.writesAccepted} accepted, ${this.paint(rejected, totals.writesRejected > 0 ? 33 : 90)}; ${totals.handoffs} handoffs`,
      this.paint(
        fit(
          '          A-Z: owner; lower case: its holder is dead or frozen, not yet reclaimed; ·: free',
          width,
        ),
        90,
      ),
    ];
  }

  private paint(text: string, code: number): string {
    return this.color ? `\x1b[${code}m${text}\x1b[0m` : text;
  }
}

function colorOf(letter: string): number {
  return COLORS[(letter.charCodeAt(0) - 65) % COLORS.length]!;
}

function formatSeconds(ms: number): string {
  return `${(ms / 1000).toFixed(1).padStart(5)}s`;
}
