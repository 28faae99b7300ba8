import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../harness/processes.js';
import { MAIN, runCli, type CliResult } from './run-cli.js';

const cli = (...args: string[]): Promise<CliResult> => runCli(args, { cwd: dir.path });

let dir: ReturnType<typeof tempDir>;

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npx tsc -p tsconfig.build.json`);
  dir = tempDir('leasehold-tour-');
});

afterAll(() => dir.cleanup());

describe('leasehold tour', () => {
  it('runs the tour: token 1, takeover with token 2, a rejected stale write', async () => {
    const store = `sqlite:${join(dir.path, 'tour.db')}`;
    const result = await cli('tour', '--ttl', '1s', '--store', store, '--json');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const steps = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const index = (who: string, event: string): number =>
      steps.findIndex((s) => s.who === who && s.event === event);
    const aAcquired = index('A', 'acquired');
    const bAcquired = index('B', 'acquired');
    expect(steps[aAcquired]).toMatchObject({ token: 1 });
    expect(steps[bAcquired]).toMatchObject({ token: 2 });
    expect(aAcquired).toBeLessThan(bAcquired);
    expect(steps.filter((s) => s.event === 'renewed').length).toBeGreaterThanOrEqual(3);
    expect(index('A', 'aborted')).toBeGreaterThan(aAcquired);
    const rejected = steps.find((s) => s.event === 'write-rejected');
    expect(rejected).toMatchObject({ writer: 'A', token: 1, highestToken: 2 });
    expect(steps[index('B', 'released')]).toMatchObject({ owner: '', token: 2, expiresAt: 0 });
    expect(steps.at(-1)?.event).toBe('summary');
  });

  it('narrates the tour as plain text by default', async () => {
    const store = `sqlite:${join(dir.path, 'tour-text.db')}`;
    const result = await cli('tour', '--ttl', '1s', '--store', store);
    expect(result.code).toBe(0);
    const out = result.stdout;
    expect(out).toMatch(/^leasehold tour: /);
    expect(out.indexOf('with token 1')).toBeGreaterThan(-1);
    expect(out.indexOf('with token 2')).toBeGreaterThan(out.indexOf('with token 1'));
    expect(out).toMatch(/REJECTS A's write with token 1 \(highest token seen: 2\)/);
    expect(out).toMatch(/^summary: /m);
  });
});
