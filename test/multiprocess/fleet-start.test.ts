import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { SqliteStore } from '../../src/index.js';
import { tempDir } from '../harness/processes.js';

const script = fileURLToPath(new URL('./fleet-start-worker.mjs', import.meta.url));
const dir = tempDir('leasehold-fleet-start-');
afterAll(() => dir.cleanup());

interface Line {
  id: string;
  event: string;
  held: number;
  resource?: string;
  token?: number;
  message?: string;
}

const WORKERS = 4;
const RESOURCES = 42;

it('fleet workers started at the same instant on a fresh SQLite file share it out evenly, never twice', async () => {
  const file = `${dir.path}/fleet.db`;
  const startAt = Date.now() + 1500;
  const lines: Line[] = [];
  const children: ChildProcess[] = [];
  for (let i = 0; i < WORKERS; i++) {
    const child = spawn(
      process.execPath,
      [script, file, String(i), String(RESOURCES), String(startAt)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    createInterface({ input: child.stdout! }).on('line', (l) => lines.push(JSON.parse(l) as Line));
    children.push(child);
  }
  // The workers create the file: the test opens it only after they started.
  await new Promise((r) => setTimeout(r, startAt + 300 - Date.now()));
  const store = await waitForFile(file);
  try {
    // Converged: every resource held by a live lease, every count within one of W/N.
    let counts: number[] = [];
    for (const end = Date.now() + 25_000; Date.now() < end;) {
      const records = await store.list({ prefix: 'shard/', limit: 1000 });
      const now = Date.now();
      const byOwner = new Map<string, number>();
      for (const r of records)
        if (r.owner !== '' && r.expiresAt >= now)
          byOwner.set(r.owner, (byOwner.get(r.owner) ?? 0) + 1);
      counts = [...byOwner.values()];
      if (counts.length === WORKERS && counts.reduce((a, b) => a + b, 0) === RESOURCES) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(lines.filter((l) => l.event === 'error')).toEqual([]);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(RESOURCES);
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    // Never granted twice: per resource, the grants seen carry distinct, rising tokens.
    const grants = new Map<string, number[]>();
    for (const l of lines.filter((x) => x.event === 'acquired'))
      grants.set(l.resource!, [...(grants.get(l.resource!) ?? []), l.token!]);
    for (const [resource, tokens] of grants)
      expect(new Set(tokens).size, resource).toBe(tokens.length);
    const handoffs = lines.filter((l) => l.event === 'handoff').length;
    // Workers that saw each other before taking anything hand nothing over; a worker whose start
    // was delayed past the settle window by a loaded machine causes a few, never a reshuffle.
    expect(handoffs).toBeLessThanOrEqual(Math.ceil(RESOURCES / WORKERS));
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => (c.exitCode === null ? once(c, 'exit') : 0)));
    const after = await store.list({ prefix: 'shard/', limit: 1000 });
    await store.close();
    // SIGTERM is a graceful stop: everything released.
    expect(after.every((r) => r.owner === '')).toBe(true);
  }
}, 60_000);

async function waitForFile(file: string): Promise<SqliteStore> {
  for (let i = 0; ; i++) {
    try {
      const store = await SqliteStore.open(file);
      return store;
    } catch (error) {
      if (i > 100) throw error;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
