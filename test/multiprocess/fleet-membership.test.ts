import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeServer } from '../harness/describe-server.js';
import { tempDir } from '../harness/processes.js';
import { RedisServer, redisUnavailable } from '../harness/redis-server.js';

// A join and a graceful leave with every worker its own process, on SQLite and on Redis. Scans
// are a minute apart: a fleet that settles within the bounds below (far under a minute) settled
// from what the store announced — what the others shed for the newcomer, what the leaver
// released — and the order of events says so: the newcomer takes exactly what was shed, the
// survivors exactly what the leaver held, nobody hands anything else over.

const script = fileURLToPath(new URL('./fleet-member-worker.mjs', import.meta.url));
const RESOURCES = 120;

interface Line {
  id: string;
  event: string;
  at: number;
  resource?: string;
  token?: number;
  message?: string;
}

class Workers {
  readonly lines: Line[] = [];
  private readonly children = new Map<string, ChildProcess>();

  constructor(private readonly url: string) {}

  start(id: string): void {
    const child = spawn(process.execPath, [script, this.url, id, String(RESOURCES)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    createInterface({ input: child.stdout! }).on('line', (l) =>
      this.lines.push(JSON.parse(l) as Line),
    );
    this.children.set(id, child);
  }

  async stop(id: string): Promise<void> {
    const child = this.children.get(id)!;
    child.kill('SIGTERM');
    if (child.exitCode === null) await once(child, 'exit');
    this.children.delete(id);
  }

  async stopAll(): Promise<void> {
    for (const child of this.children.values()) child.kill('SIGKILL');
    await Promise.all(
      [...this.children.values()].map((c) => (c.exitCode === null ? once(c, 'exit') : 0)),
    );
  }

  /** What each live worker holds now, from its own events. */
  held(): Map<string, Set<string>> {
    const out = new Map<string, Set<string>>(
      [...this.children.keys()].map((id) => [id, new Set()]),
    );
    for (const l of this.lines) {
      const set = out.get(l.id);
      if (!set || !l.resource) continue;
      if (l.event === 'acquired') set.add(l.resource);
      else set.delete(l.resource);
    }
    return out;
  }

  /** Waits until the live workers hold every resource, each count within one of the fair share. */
  async balanced(within: number): Promise<boolean> {
    for (const end = Date.now() + within; Date.now() < end;) {
      const errors = this.lines.filter((l) => l.event === 'error');
      if (errors.length > 0) throw new Error(JSON.stringify(errors));
      const counts = [...this.held().values()].map((s) => s.size);
      const fair = RESOURCES / counts.length;
      if (
        counts.reduce((a, b) => a + b, 0) === RESOURCES &&
        counts.every((n) => Math.abs(n - fair) < 1)
      )
        return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  }
}

function membershipTests(url: () => string): void {
  it("a join takes exactly what the others shed, and a graceful leave hands exactly the leaver's leases to the others, each long before a scan", async () => {
    const workers = new Workers(url());
    try {
      for (const id of ['a', 'b', 'c', 'd']) workers.start(id);
      expect(await workers.balanced(20_000)).toBe(true);

      const mark = workers.lines.length;
      workers.start('e');
      expect(await workers.balanced(15_000)).toBe(true);
      const joined = workers.lines.slice(mark);
      const shed = joined.filter((l) => l.event === 'handoff').map((l) => l.resource!);
      const took = joined
        .filter((l) => l.event === 'acquired' && l.id === 'e')
        .map((l) => l.resource!);
      expect(took.sort()).toEqual(shed.sort());
      expect(took).toHaveLength(RESOURCES / 5);
      expect(joined.filter((l) => l.event === 'acquired' && l.id !== 'e')).toEqual([]);

      const leaving = [...workers.held().get('a')!];
      const before = workers.lines.length;
      await workers.stop('a');
      expect(await workers.balanced(15_000)).toBe(true);
      const left = workers.lines.slice(before);
      expect(left.filter((l) => l.event === 'handoff' || l.event === 'lost')).toEqual([]);
      const taken = left.filter((l) => l.event === 'acquired').map((l) => l.resource!);
      expect(taken.sort()).toEqual(leaving.sort());
    } finally {
      await workers.stopAll();
    }
  }, 90_000);
}

describe('fleet membership across processes: SQLite', () => {
  const dir = tempDir('leasehold-fleet-membership-');
  afterAll(() => dir.cleanup());
  membershipTests(() => `sqlite://${dir.path}/fleet.db`);
});

describeServer('fleet membership across processes: Redis', redisUnavailable(), () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await server?.stop();
  });
  membershipTests(() => `${server.url}?prefix=fleet-membership:`);
});
