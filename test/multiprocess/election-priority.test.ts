import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { tempDir } from '../harness/processes.js';
import { violations, type Tenure } from '../harness/tenures.js';

const script = fileURLToPath(new URL('./election-worker.mjs', import.meta.url));
const dir = tempDir('leasehold-election-priority-');
afterAll(() => dir.cleanup());

interface Line {
  owner: string;
  event: string;
  at: number;
  token?: number;
  reason?: string;
  message?: string;
}

it('a candidate process of higher priority takes leadership from a running leader process once, after its hold-off; no two terms overlap', async () => {
  const file = `${dir.path}/election.db`;
  const lines: Line[] = [];
  const children: ChildProcess[] = [];
  const start = (owner: string, priority: number): void => {
    const child = spawn(process.execPath, [script, file, owner, String(priority), '1500'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    createInterface({ input: child.stdout! }).on('line', (l) => lines.push(JSON.parse(l) as Line));
    children.push(child);
  };
  const seen = async (what: (l: Line) => boolean, ms = 20_000): Promise<Line> => {
    for (const end = Date.now() + ms; Date.now() < end;) {
      const line = lines.find(what);
      if (line) return line;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`not seen within ${ms} ms; lines: ${JSON.stringify(lines)}`);
  };
  try {
    start('low', 1);
    await seen((l) => l.owner === 'low' && l.event === 'elected');
    start('high', 2);
    const started = await seen((l) => l.owner === 'high' && l.event === 'started');
    const second = await seen((l) => l.owner === 'high' && l.event === 'elected');
    // Not before it had campaigned for the hold-off (1.5 s).
    expect(second.at - started.at).toBeGreaterThanOrEqual(1500);
    // Two more heartbeats of the high one's term: nothing changes hands again.
    await seen(
      () =>
        lines.filter((l) => l.owner === 'high' && l.event === 'renewed' && l.at > second.at)
          .length >= 2,
    );
    expect(lines.filter((l) => l.event === 'error')).toEqual([]);
    const demoted = lines.find((l) => l.owner === 'low' && l.event === 'demoted');
    expect(demoted?.reason).toBe('yielded');
    // The low one stopped believing before the high one's grant, which carries a higher token:
    // the checker of demo and verify over every term, from its grant to its signal's abort (one
    // not aborted yet still runs now).
    const now = Date.now();
    const terms = lines
      .filter((l) => l.event === 'elected')
      .map((l): Tenure => ({
        resource: 'scheduler',
        owner: l.owner,
        token: l.token!,
        start: l.at,
        end:
          lines.find((e) => e.owner === l.owner && e.event === 'aborted' && e.token === l.token)
            ?.at ?? now,
      }));
    expect(violations(terms)).toEqual([]);
    // Once each: one term for the low one, one for the high one.
    expect(lines.filter((l) => l.event === 'elected').map((l) => l.owner)).toEqual(['low', 'high']);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => (c.exitCode === null ? once(c, 'exit') : 0)));
  }
}, 60_000);
