import { spawn } from 'node:child_process';
import { expect, it } from 'vitest';
import { MAIN } from '../cli/run-cli.js';
import { tempDir, waitFor } from '../harness/processes.js';

it('leasehold demo --dashboard serves the live page on the demo’s store while it runs, then stops it', async () => {
  const cwd = tempDir('leasehold-demo-dashboard-');
  const env = { ...process.env };
  delete env.LEASEHOLD_STORE;
  const child = spawn(process.execPath, [MAIN, 'demo', '--quick', '--dashboard', '0'], {
    cwd: cwd.path,
    env,
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  try {
    await waitFor('the dashboard line', () => /dashboard: http:\/\/127\.0\.0\.1:\d+\//.test(out));
    const url = /dashboard: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out)![1]!;
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<html');
    await waitFor('the demo fleet on the page', async () => {
      const state = (await (await fetch(new URL('/api/state', url))).json()) as {
        records: unknown[][];
      };
      return state.records.some((r) => String(r[0]).startsWith('demo-') && r[1] !== '');
    });
    expect(await exited).toBe(0);
    expect(out).toContain('safety verdict: SAFE');
    await expect(fetch(url)).rejects.toThrow(); // closed with the demo
  } finally {
    child.kill('SIGKILL');
    cwd.cleanup();
  }
}, 60_000);
