// How long SQLite store calls hold the event loop (design rule 6): the longest gap between runs
// of a 1 ms interval while a renewal waits on another process's write lock, and while batches of
// 10,000 are acquired, renewed, released and listed.
// Usage: npm run build && node bench/sqlite-stalls.mjs [--rounds 7] [--lock-ms 2000] [--dist DIR]
// (--dist points at another build of leasehold, to compare two versions on one machine.)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback;
};
const root = fileURLToPath(new URL('..', import.meta.url));
const dist = resolve(option('dist', join(root, 'dist')));
const rounds = Number(option('rounds', 7));
const lockMs = Number(option('lock-ms', 2000));
const BATCH = 10_000;
const SETTLE_MS = 300;

const { SqliteStore } = await import(pathToFileURL(join(dist, 'index.js')).href);
const dir = mkdtempSync(join(tmpdir(), 'leasehold-stalls-'));
let files = 0;

/** Runs `work`, timing it and the longest gap between runs of a 1 ms interval meanwhile. */
async function measure(work) {
  let last = performance.now();
  let longest = 0;
  let ticks = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    ticks++;
  }, 1);
  const started = performance.now();
  try {
    const result = await work();
    const ended = performance.now();
    return { result, ms: ended - started, stallMs: Math.max(longest, ended - last), ticks };
  } finally {
    clearInterval(timer);
  }
}

/** Another process holding the file's write lock for `ms`; resolves once it has the lock. */
async function holdWriteLock(path, ms) {
  const script = `
    const db = new (require('better-sqlite3'))(process.argv[1], { timeout: 10000 });
    db.exec('BEGIN IMMEDIATE');
    process.stdout.write('locked\\n');
    setTimeout(() => { db.exec('COMMIT'); db.close(); process.stdout.write('released\\n'); }, Number(process.argv[2]));`;
  const child = spawn(process.execPath, ['-e', script, path, String(ms)], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  if ((await lines.next()).value !== 'locked') throw new Error('the lock holder did not start');
  return { released: lines.next().then(({ value }) => value === 'released'), child };
}

// The longest stall of each round; its minimum over rounds is what the call itself costs (a
// stall the call causes shows in every round, the machine's own preemption rarely does).
const rows = [];
function report(scenario, runs) {
  const stalls = runs.map((r) => r.stallMs).sort((a, b) => a - b);
  const times = runs.map((r) => r.ms).sort((a, b) => a - b);
  const mid = (xs) => xs[Math.floor(xs.length / 2)];
  const row = {
    scenario,
    runs: runs.length,
    stallMinMs: stalls[0],
    stallMedianMs: mid(stalls),
    stallMaxMs: stalls.at(-1),
    callMedianMs: mid(times),
  };
  rows.push(row);
  const ms = (x) => `${x.toFixed(1).padStart(7)} ms`;
  console.log(
    `${scenario.padEnd(52)} longest stall min ${ms(row.stallMinMs)}, median ${ms(row.stallMedianMs)}, ` +
      `max ${ms(row.stallMaxMs)}   call median ${ms(row.callMedianMs)}`,
  );
}

console.log(`leasehold at ${dist}; ${rounds} rounds; write lock held ${lockMs} ms\n`);

// 0. The machine's own noise: the longest gap of the same interval while nothing runs.
{
  const runs = [];
  for (let round = 0; round < Math.min(rounds, 5); round++)
    runs.push(await measure(() => new Promise((r) => setTimeout(r, lockMs))));
  report(`idle for ${lockMs} ms (the machine's noise floor)`, runs);
}

// 1. A renewal while another process holds the write lock for lockMs (busyTimeoutMs 5 s, default).
// `while locked`: the longest stall that began before the holder let go; `overall` also counts the
// commit once it has (with synchronous=full, an fsync: as long as the disk takes).
for (const synchronous of ['full', 'normal']) {
  const overall = [];
  const locked = [];
  for (let round = 0; round < Math.min(rounds, 5); round++) {
    const path = join(dir, `lock-${++files}.db`);
    const store = await SqliteStore.open(path, { synchronous });
    const lease = await store.tryAcquire('job', 'me', 60_000);
    const lock = await holdWriteLock(path, SETTLE_MS + lockMs);
    // The holder process is still starting up; measured from the start, its startup would compete
    // for the CPU with what is measured here.
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    let releasedAt = Infinity;
    let lockedStall = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      if (last < releasedAt) lockedStall = Math.max(lockedStall, now - last);
      last = now;
    }, 1);
    const run = await measure(async () => {
      const renewal = store.renew(lease);
      await lock.released;
      releasedAt = performance.now();
      return renewal;
    });
    clearInterval(timer);
    if (!run.result) throw new Error('the renewal under the lock did not land');
    overall.push(run);
    locked.push({ ...run, stallMs: Math.max(lockedStall, releasedAt - last) });
    await store.close();
  }
  report(`renew under a ${lockMs} ms lock, while locked (${synchronous})`, locked);
  report(`renew under a ${lockMs} ms lock, overall (${synchronous})`, overall);
}

// 2. Batches of 10,000, on a fresh file each round.
for (const synchronous of ['full', 'normal']) {
  const runs = { acquireMany: [], renewMany: [], releaseMany: [], list: [] };
  for (let round = 0; round < rounds; round++) {
    const store = await SqliteStore.open(join(dir, `batch-${++files}.db`), { synchronous });
    const names = Array.from({ length: BATCH }, (_, i) => `r/${i}`);
    const acquired = await measure(() => store.acquireMany(names, 'me', 60_000));
    const leases = acquired.result.map((o) => o.lease);
    if (leases.some((l, i) => l?.resource !== names[i]))
      throw new Error('acquireMany out of order');
    runs.acquireMany.push(acquired);
    runs.renewMany.push(await measure(() => store.renewMany(leases)));
    runs.list.push(await measure(() => store.list({ prefix: 'r/', limit: BATCH })));
    runs.releaseMany.push(await measure(() => store.releaseMany(leases)));
    await store.close();
  }
  for (const [call, list] of Object.entries(runs))
    report(`${call} of ${BATCH.toLocaleString('en')} (synchronous=${synchronous})`, list);
}

if (args.includes('--json')) console.log(JSON.stringify({ dist, rounds, lockMs, rows }, null, 2));
rmSync(dir, { recursive: true, force: true });
