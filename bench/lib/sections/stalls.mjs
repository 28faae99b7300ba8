// How long SQLite store calls hold the event loop (its driver is synchronous): the longest gap
// between runs of a 1 ms interval while a renewal waits on another process's write lock, while an
// open waits on a fresh file another process holds, while batches of 10,000 are acquired, renewed,
// released and listed, and while an acquireFirst is refused over LIMITS.permitsMax held candidates. The minimum over rounds is what
// the call itself costs (a stall the call causes shows in every round; the machine's own
// preemption rarely does), beside the machine's noise floor with nothing running.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { measure, round1 } from '../measure.mjs';
import { onCleanup, sleep } from '../processes.mjs';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BATCH = 10_000;
const SETTLE_MS = 300;

export async function stalls({ store, server, libs, quick, log }) {
  const { LIMITS, SqliteStore, permitResource } = libs[0].lib;
  const rounds = quick ? 3 : 7;
  const lockMs = quick ? 500 : 2000;
  const modes = quick ? ['full'] : ['full', 'normal']; // synchronous=: leasehold's default, and the faster one
  let files = 0;
  const path = () => join(server.dir, `stalls-${++files}.db`);
  const rows = [];
  const report = (scenario, runs) => {
    const row = summary(store, scenario, runs);
    log(
      `${scenario}: longest stall min ${row.stallMinMs} ms, median ${row.stallMedianMs} ms, max ${row.stallMaxMs} ms`,
    );
    rows.push(row);
  };

  report(
    `idle ${lockMs} ms (the machine's noise floor)`,
    await repeat(rounds, () => measure(() => sleep(lockMs))),
  );

  // A renewal while another process holds the write lock (busyTimeoutMs 5 s, the default).
  // `while locked`: the longest stall that began before the holder let go.
  for (const synchronous of modes) {
    const locked = [];
    for (let round = 0; round < rounds; round++) {
      const file = path();
      const s = await SqliteStore.open(file, { synchronous });
      try {
        const lease = await s.tryAcquire('job', 'me', 60_000);
        const run = await underLock(file, 'IMMEDIATE', lockMs, () => s.renew(lease));
        if (!run.result) throw new Error('the renewal under the lock did not land');
        locked.push(run);
      } finally {
        await s.close();
      }
    }
    report(
      `renew under another process's ${lockMs} ms write lock (synchronous=${synchronous})`,
      locked,
    );
  }

  // Opening a fresh file (rollback mode until the store switches it to WAL) that another process
  // holds with BEGIN EXCLUSIVE: the set-up waits for it asynchronously, in short synchronous steps.
  const opens = [];
  for (let round = 0; round < rounds; round++) {
    const file = path();
    const run = await underLock(file, 'EXCLUSIVE', lockMs, () => SqliteStore.open(file));
    await run.result.close();
    opens.push(run);
  }
  report(`open of a fresh file under another process's ${lockMs} ms exclusive lock`, opens);

  // Batches of 10,000 (a heartbeat of a client holding 10,000 leases is one renewMany).
  for (const synchronous of modes) {
    const runs = { acquireMany: [], renewMany: [], releaseMany: [], list: [] };
    for (let round = 0; round < rounds; round++) {
      const s = await SqliteStore.open(path(), { synchronous });
      try {
        const names = Array.from({ length: BATCH }, (_, i) => `r/${i}`);
        const acquired = await measure(() => s.acquireMany(names, 'me', 60_000));
        const leases = acquired.result.map((o) => o.lease);
        if (leases.some((l) => !l)) throw new Error('acquireMany refused a free resource');
        runs.acquireMany.push(acquired);
        runs.renewMany.push(await measure(() => s.renewMany(leases)));
        runs.list.push(await measure(() => s.list({ prefix: 'r/', limit: BATCH })));
        runs.releaseMany.push(await measure(() => s.releaseMany(leases)));
      } finally {
        await s.close();
      }
    }
    for (const [call, list] of Object.entries(runs))
      report(`${call} of 10,000 (synchronous=${synchronous})`, list);
  }

  // An acquireFirst over the most candidates allowed, every one held: one transaction that tries
  // each in turn (the fair line's 256 slots are a shorter case of the same step).
  for (const synchronous of modes) {
    const refusals = [];
    const s = await SqliteStore.open(path(), { synchronous });
    try {
      const names = Array.from({ length: LIMITS.permitsMax }, (_, i) => permitResource('wide', i));
      if ((await s.acquireMany(names, 'a', 60_000)).some((o) => !o.lease))
        throw new Error('acquireMany refused a free resource');
      for (let round = 0; round < rounds; round++) {
        const run = await measure(() => s.acquireFirst(names, 'b', 60_000));
        if (run.result !== null) throw new Error('acquireFirst took a held candidate');
        refusals.push(run);
      }
    } finally {
      await s.close();
    }
    report(
      `acquireFirst refused over ${LIMITS.permitsMax} held candidates (synchronous=${synchronous})`,
      refusals,
    );
  }
  return rows;
}

/**
 * `work()` started while another process holds `file` (`BEGIN <begin>`) for `lockMs`, measured
 * until it settles; `stallMs` is the longest stall that began before the holder let go.
 */
async function underLock(file, begin, lockMs, work) {
  const lock = await holdLock(file, begin, SETTLE_MS + lockMs);
  await sleep(SETTLE_MS); // the holder's start-up would otherwise compete for the CPU
  let releasedAt = Infinity;
  let last = 0;
  let longest = 0;
  let timer;
  const run = await measure(async () => {
    // Watched from inside: `measure` starts with a full garbage collection, which is the
    // benchmark's own pause, not the store's.
    last = performance.now();
    timer = setInterval(() => {
      const t = performance.now();
      if (last < releasedAt) longest = Math.max(longest, t - last);
      last = t;
    }, 1);
    const call = work();
    await lock.released;
    releasedAt = performance.now();
    return call;
  });
  clearInterval(timer);
  return { ...run, stallMs: Math.max(longest, releasedAt - last) };
}

async function repeat(n, fn) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(await fn());
  return out;
}

function summary(store, scenario, runs) {
  const stalls = runs.map((r) => r.stallMs).sort((a, b) => a - b);
  const times = runs.map((r) => r.wallMs).sort((a, b) => a - b);
  const mid = (xs) => xs[Math.floor(xs.length / 2)];
  return {
    section: 'stalls',
    store,
    scenario,
    runs: runs.length,
    stallMinMs: round1(stalls[0]),
    stallMedianMs: round1(mid(stalls)),
    stallMaxMs: round1(stalls.at(-1)),
    callMedianMs: round1(mid(times)),
  };
}

/** Another process holding the file with `BEGIN <begin>` for `ms`; resolves once it has the lock. */
async function holdLock(path, begin, ms) {
  const script = `
    const db = new (require('better-sqlite3'))(process.argv[1], { timeout: 10000 });
    db.exec('BEGIN ' + process.argv[3]);
    process.stdout.write('locked\\n');
    setTimeout(() => { db.exec('COMMIT'); db.close(); process.stdout.write('released\\n'); }, Number(process.argv[2]));`;
  const child = spawn(process.execPath, ['-e', script, path, String(ms), begin], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const forget = onCleanup(() => child.exitCode === null && child.kill('SIGKILL'));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  if ((await lines.next()).value !== 'locked') throw new Error('the lock holder did not start');
  const released = lines.next().then(({ value }) => {
    forget();
    return value === 'released';
  });
  return { released };
}
