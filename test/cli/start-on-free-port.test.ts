import { createServer, type Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startOnFreePort } from '../../src/cli/harness/servers/start-on-free-port.js';

// The one retry loop every private server starts through (tests, verify and the benchmarks).

/** A listener on 127.0.0.1:`port`, like a server that got its port. */
function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

describe('startOnFreePort', () => {
  it('tries a new server on a fresh port after a failed start, discarding the failed one', async () => {
    const made: number[] = [];
    const discarded: number[] = [];
    const server = await startOnFreePort((port) => (made.push(port), { port }), {
      start: async ({ port }) => {
        if (made.length < 3) throw new Error(`port ${port} taken`);
      },
      discard: ({ port }) => void discarded.push(port),
    });
    expect(made).toHaveLength(3);
    expect(made.every((port) => port > 0)).toBe(true);
    expect(server).toEqual({ port: made[2] });
    expect(discarded).toEqual(made.slice(0, 2));
    // The port was free: a server can bind it.
    const listener = await listen(server.port);
    await new Promise((r) => listener.close(r));
  });

  it('gives up after `attempts` servers with the last error, each discarded', async () => {
    let made = 0;
    let discarded = 0;
    const start = startOnFreePort(() => ++made, {
      start: async (n) => {
        throw new Error(`start ${n} failed`);
      },
      discard: () => void discarded++,
      attempts: 2,
    });
    await expect(start).rejects.toThrow('start 2 failed');
    expect([made, discarded]).toEqual([2, 2]);
  });

  it('stops at once when retryAfter says another server would not help', async () => {
    let made = 0;
    let discarded = 0;
    const start = startOnFreePort(() => ++made, {
      start: async () => {
        throw new Error('no such binary');
      },
      discard: () => void discarded++,
      retryAfter: (error) => /bind/.test(String(error)),
    });
    await expect(start).rejects.toThrow('no such binary');
    expect([made, discarded]).toEqual([1, 1]);
  });
});
