import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { hasEnded, processTree } from '../../src/cli/harness/servers/process-tree.js';
import { describeServer } from '../harness/describe-server.js';
import { waitFor } from '../harness/processes.js';
import { RedisServer, redisUnavailable } from '../harness/redis-server.js';

// The starters of src/cli/harness/servers, which verify ships and the tests and the benchmarks
// use: what a private server's handle does to its processes and its folder.

/** The one-letter state of `pid` in /proc (`T`: stopped). */
function state(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
}

describeServer('a private server', redisUnavailable(), () => {
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of stops) await stop().catch(() => undefined);
  });

  it('is paused when pause returns, and comes back on the same port and folder after a kill', async () => {
    const server = await RedisServer.start({ aof: true });
    stops.push(() => server.stop());
    const first = server.pid!;
    server.pause();
    expect(processTree(first).map(state)).toEqual(processTree(first).map(() => 'T'));
    server.resume();
    expect(await server.cli('SET', 'k', 'v')).toBe('OK');
    await server.restart();
    expect(server.pid).not.toBe(first);
    expect(hasEnded(first)).toBe(true);
    expect(await server.cli('GET', 'k')).toBe('v');
    const second = server.pid!;
    await server.stop();
    expect(hasEnded(second)).toBe(true);
    expect(existsSync(server.dir)).toBe(false);
  });

  it('is killed and its folder removed by its watchdog when its owner dies without stopping it', async () => {
    const module = join(import.meta.dirname, '../../dist/cli/harness/servers');
    const owner = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { PrivateRedis } = await import(${JSON.stringify(`${module}/redis-server.js`)});
         const { freePort, serverFolder } = await import(${JSON.stringify(`${module}/process-tree.js`)});
         const server = new PrivateRedis(serverFolder('leasehold-watchdog-'), { port: await freePort() });
         await server.launch();
         console.log(JSON.stringify({ pid: server.pid, dir: server.dir }));
         setInterval(() => {}, 1000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: owner.stdout! }).once('line', resolve);
      owner.once('exit', (code) => reject(new Error(`the owner exited (${code})`)));
    });
    const { pid, dir } = JSON.parse(line) as { pid: number; dir: string };
    expect(hasEnded(pid)).toBe(false);
    expect(existsSync(dir)).toBe(true);
    owner.kill('SIGKILL');
    await waitFor('the watchdog to kill the server', () => hasEnded(pid));
    await waitFor('the watchdog to remove the folder', () => !existsSync(dir));
  });
});
