import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  hasEnded,
  processesIn,
  processTree,
  serverFolder,
} from '../../src/cli/harness/servers/process-tree.js';
import { PrivateServer, type ServerCommand } from '../../src/cli/harness/servers/private-server.js';
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

/**
 * A "server" that forks without pause, as PostgreSQL's postmaster forks a backend per connection
 * in a burst when a paused server resumes: a child forked between listing its tree and signalling
 * it escaped the pause, and after a kill it lived on, holding the server's memory (a new
 * PostgreSQL then refused to start) and its output (verify then never exited).
 */
class ForkingServer extends PrivateServer {
  readonly program = 'sh';
  readonly port = 0;
  get url(): string {
    return 'forking:';
  }
  protected command(): ServerCommand {
    return { file: 'sh', args: ['-c', 'echo ready; while :; do sleep 30 & sleep 0.002; done'] };
  }
  protected isReady(output: string): boolean {
    return output.includes('ready');
  }
}

describe('a private server that forks all the time', () => {
  it('is paused whole, and leaves no process in its folder after a kill or a stop', async () => {
    const server = new ForkingServer(serverFolder('leasehold-forking-'));
    try {
      await server.launch();
      for (let round = 0; round < 5; round++) {
        await new Promise((r) => setTimeout(r, 50));
        server.pause();
        const stopped = processesIn(server.dir).map((pid) => `${pid} ${state(pid)}`);
        expect(stopped.length).toBeGreaterThan(1);
        expect(stopped.filter((line) => !line.endsWith(' T'))).toEqual([]);
        server.resume();
      }
      await new Promise((r) => setTimeout(r, 50));
      await server.kill();
      expect(processesIn(server.dir)).toEqual([]);
      await server.launch();
      await new Promise((r) => setTimeout(r, 50));
      // sh leaves its children to run on; the strays are swept half a second after it ended.
      await server.stop(500);
      expect(processesIn(server.dir)).toEqual([]);
      expect(existsSync(server.dir)).toBe(false);
    } finally {
      server.killNow();
    }
  });
});
