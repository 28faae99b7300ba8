import { performance } from 'node:perf_hooks';

/** Prints the tour's steps with the time since the start, measured, as text or one JSON object a line. */
export class Narrator {
  private readonly start = performance.now();

  constructor(private readonly json: boolean) {}

  /** Milliseconds since the tour started. */
  elapsed(): number {
    return Math.round(performance.now() - this.start);
  }

  say(who: string, event: string, text: string, data: Record<string, unknown> = {}): void {
    const atMs = this.elapsed();
    const line = this.json
      ? JSON.stringify({ atMs, who, event, ...data, text })
      : `${String(atMs).padStart(6)} ms  ${who.padEnd(10)} ${text}`;
    process.stdout.write(`${line}\n`);
  }

  /** A line without a timestamp (headings, the summary); JSON mode wraps it as an event. */
  note(event: string, text: string, data: Record<string, unknown> = {}): void {
    const line = this.json ? JSON.stringify({ event, ...data, text }) : text;
    process.stdout.write(`${line}\n`);
  }
}
