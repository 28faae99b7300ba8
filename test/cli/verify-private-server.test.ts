import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { FaultRecord } from '../../src/cli/harness/history-format.js';
import { postgresUnavailable } from '../harness/postgres-server.js';
import { tempDir } from '../harness/processes.js';
import { redisUnavailable } from '../harness/redis-server.js';
import { faultEvidence, verify, type VerifyRun } from '../verify/run-verify.js';
import { runCli } from './run-cli.js';

const dir = tempDir('leasehold-verify-private-');
afterAll(() => dir.cleanup());

/** The folder and port of the private server, from verify's note about it. */
function serverOf(run: VerifyRun): { folder: string; port: number } {
  const note = run.out.notes.find((n) => n.startsWith('store: a private '));
  const match = /on 127\.0\.0\.1:(\d+) in (\S+),/.exec(note ?? '');
  if (!match) throw new Error(`no note about the private server in ${run.out.notes.join('; ')}`);
  return { port: Number(match[1]), folder: match[2]! };
}

/** Live (not zombie) processes whose command line or working folder lies in `folder`. */
function processesIn(folder: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))) continue;
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      let cwd = '';
      try {
        cwd = readlinkSync(`/proc/${pid}/cwd`);
      } catch {
        // not ours to read
      }
      if (cmdline.includes(folder) || cwd.startsWith(folder)) found.push(`${pid} ${cmdline}`);
    } catch {
      // ended meanwhile
    }
  }
  return found;
}

/** Whether something listens on 127.0.0.1:`port` (IPv4 table of the kernel). */
function listening(port: number): boolean {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .some((line) => {
      const [, local, , state] = line.trim().split(/\s+/);
      return local === `0100007F:${hex}` && state === '0A';
    });
}

/** Whether `pid` still runs (a zombie has ended). */
function runs(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Checks a run on a private server: safe, both store faults recorded with their times, nothing left. */
function expectSafeAndGone(run: VerifyRun, program: string): FaultRecord[] {
  expect(run.out.overlaps).toEqual([]);
  expect(run.out.tokenOrder).toEqual([]);
  expect(run.out.staleAccepted).toEqual([]);
  expect(run.code).toBe(0);
  expect(run.out.notes.join('\n')).not.toMatch(/skipped/);
  const store = run.records.filter(
    (r): r is FaultRecord => r.type === 'fault' && r.kind.startsWith('store-'),
  );
  const pauses = store.filter((f) => f.kind === 'store-pause');
  const restarts = store.filter((f) => f.kind === 'store-restart');
  expect(pauses.length).toBeGreaterThanOrEqual(1);
  expect(restarts.length).toBeGreaterThanOrEqual(1);
  for (const f of store) expect(f.until).toBeGreaterThan(f.at);
  // A pause lasts the seeded time at least; a restart brings up a new process.
  for (const f of pauses) {
    const ms = Number(/stopped for (\d+) ms/.exec(f.note ?? '')?.[1]);
    expect(f.until! - f.at).toBeGreaterThanOrEqual(ms);
  }
  const pids = new Set<number>();
  for (const f of restarts) {
    const match = new RegExp(`${program} pid (\\d+) killed, pid (\\d+) started`).exec(f.note ?? '');
    expect(match, f.note).not.toBeNull();
    expect(match![1]).not.toBe(match![2]);
    pids.add(Number(match![1])).add(Number(match![2]));
  }
  expect(run.out.faults['store-restart']).toBe(restarts.length);
  expect(run.html).toContain('store-restart');
  expect(run.out.writes.accepted).toBeGreaterThan(20);
  // After verify exited: no process of the server left, its folder and port free.
  const { folder, port } = serverOf(run);
  expect(processesIn(folder)).toEqual([]);
  expect([...pids].filter(runs)).toEqual([]);
  expect(existsSync(folder)).toBe(false);
  expect(listening(port)).toBe(false);
  return store;
}

describe('leasehold verify on a private server it starts', () => {
  it.skipIf(redisUnavailable() !== null)(
    'redis: safe through store-pause, store-restart (AOF keeps the tokens) and kill; nothing left behind',
    async () => {
      const run = await verify('redis', join(dir.path, 'redis'), [
        ...['--faults', 'store-pause,store-restart,kill', '--duration', '12s', '--ttl', '1s'],
        ...['--workers', '4', '--resources', '12', '--seed', '7'],
      ]);
      expectSafeAndGone(run, 'redis-server');
      expect(faultEvidence(run.records).killed).toBeGreaterThanOrEqual(1);
    },
    50_000,
  );

  it.skipIf(postgresUnavailable() !== null)(
    'postgres: safe through store-pause and store-restart; nothing left behind',
    async () => {
      const run = await verify('postgres', join(dir.path, 'postgres'), [
        ...['--faults', 'store-pause,store-restart', '--duration', '12s', '--ttl', '1s'],
        ...['--workers', '4', '--resources', '12', '--seed', '7'],
      ]);
      const store = expectSafeAndGone(run, 'postgres');
      // Seed 7 pauses the server both shorter and longer than the TTL. The seeded length is
      // read from each pause's note: the measured one also holds the time a loaded machine
      // takes to stop and resume the process tree, so it says nothing of the seed.
      const notes = store.filter((f) => f.kind === 'store-pause').map((f) => f.note ?? '');
      const seeded = notes.map((note) => /stopped for (\d+) ms, (shorter|longer) than/.exec(note));
      expect(seeded.every((match) => match !== null)).toBe(true);
      const lengths = seeded.map((match) => Number(match![1]));
      expect(Math.min(...lengths)).toBeLessThan(1000);
      expect(Math.max(...lengths)).toBeGreaterThan(1000);
      expect(seeded.map((match) => match![2])).toEqual(
        expect.arrayContaining(['shorter', 'longer']),
      );
    },
    50_000,
  );

  it('refuses a bare scheme it cannot start a server for, and skips store faults on a store it did not start', async () => {
    const foo = await runCli(['verify', '--store', 'foo']);
    expect(foo.code).toBe(2);
    expect(foo.stderr).toMatch(
      /--store foo: verify starts a private server only for redis, postgres, etcd/,
    );
    const run = await verify(`sqlite:${join(dir.path, 'leases.db')}`, join(dir.path, 'sqlite'), [
      ...['--faults', 'kill,store-pause', '--duration', '2s', '--ttl', '1s', '--workers', '2'],
      ...['--resources', '2', '--seed', '1'],
    ]);
    expect(run.code).toBe(0);
    expect(run.out.notes.join('\n')).toMatch(
      /store-pause skipped: verify did not start sqlite:.* itself/,
    );
    expect(run.records.some((r) => r.type === 'fault' && r.kind.startsWith('store-'))).toBe(false);
  }, 30_000);
});
