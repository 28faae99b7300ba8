// One transition at PostgreSQL's own limit: leasehold tryAcquire → release cycles (default
// options) beside a bare compare-and-set of the same shape (one prepared INSERT … ON CONFLICT with
// a token column to acquire, one prepared UPDATE to release), at 1 and 32 in flight (each worker
// on its own key). Median and range over rounds, per contender and as its ratio to the bare
// compare-and-set within the same round. Also what a cycle costs: statements, write transactions
// (xids), WAL bytes, server and client CPU, NOTIFYs heard by a plain LISTEN; and how soon a
// watching peer hears a release.
//
// The server is private (free 127.0.0.1 port, temp folder, run as the `postgres` user when we are
// root) and durable as shipped: fsync=on, synchronous_commit=on, full_page_writes=on,
// wal_level=replica, default shared_buffers. Both contenders use a pool of 10 connections
// (leasehold's default) and named prepared statements (leasehold's default).
//
//   npm run build && node bench/transition-postgres.mjs
//     [--rounds 5] [--seconds 2] [--slices 8] [--cycles 400] [--inflight 1,32] [--only a,b]
//
// With 1 in flight the contenders take turns cycle by cycle (`--cycles` each per round); with
// more, each runs `--seconds` per round in `--slices` turns. The order is shuffled every turn, so
// every contender sees the same moments of a shared machine and none always follows the same one.
// LEASEHOLD_DIST=dir measures another build; LEASEHOLD_BASELINE_DIST=dir adds that build as
// `baseline`, so two builds meet in one run.
import { execFileSync, spawn } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';

const { values: argv } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '2' },
    cycles: { type: 'string', default: '400' },
    slices: { type: 'string', default: '8' },
    inflight: { type: 'string', default: '1,32' },
    only: { type: 'string' },
  },
});
const ROUNDS = Number(argv.rounds);
const SECONDS = Number(argv.seconds);
const CYCLES = Number(argv.cycles);
const SLICES = Number(argv.slices);
const IN_FLIGHT = argv.inflight.split(',').map(Number);
const TTL = 20_000;
const POOL = 10;
const BIN = process.env.LEASEHOLD_PG_BIN ?? '/usr/lib/postgresql/15/bin';

const distOf = (dir) => pathToFileURL(join(resolve(dir), 'index.js')).href;
const leasehold = await import(
  process.env.LEASEHOLD_DIST ? distOf(process.env.LEASEHOLD_DIST) : '../dist/index.js'
);
const baseline = process.env.LEASEHOLD_BASELINE_DIST
  ? await import(distOf(process.env.LEASEHOLD_BASELINE_DIST))
  : undefined;

// Every statement a pg client sends, whoever sends it (both builds load this same pg module).
let statementsSent = 0;
const clientQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function query(...args) {
  statementsSent++;
  return clientQuery.apply(this, args);
};

function freePort() {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

function serverUser() {
  if (process.getuid?.() !== 0) return {};
  const id = (flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** Every pid in the tree under `root` (backends are children of the postmaster). */
function processTree(root) {
  const children = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) out.push(...(children.get(out[i]) ?? []));
  return out;
}

/** CPU time (user + system) of the whole server tree, in µs. */
function serverCpuUs(pid) {
  let ticks = 0;
  for (const p of processTree(pid)) {
    try {
      const fields = readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone meanwhile
    }
  }
  return ticks * 10_000;
}

async function startPostgres() {
  const user = serverUser();
  const dir = mkdtempSync(join(tmpdir(), 'lh-bench-pg-'));
  if (user.uid !== undefined) chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  execFileSync(
    join(BIN, 'initdb'),
    ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'],
    {
      ...user,
      stdio: 'ignore',
    },
  );
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const child = spawn(
      join(BIN, 'postgres'),
      [
        ...['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1'],
        // Durable as shipped; said out loud so the output records it.
        ...['-c', 'fsync=on', '-c', 'synchronous_commit=on', '-c', 'full_page_writes=on'],
      ],
      { ...user, stdio: 'ignore' },
    );
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    const stop = () => {
      for (const p of processTree(child.pid).reverse()) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          // gone
        }
      }
    };
    for (let i = 0; i < 200; i++) {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
      client.on('error', () => {});
      try {
        await client.connect();
        await client.end();
        const cleanup = () => {
          stop();
          rmSync(dir, { recursive: true, force: true });
        };
        return { url, pid: child.pid, stop: cleanup };
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
      if (child.exitCode !== null) break;
    }
    stop();
    if (attempt === 3) throw new Error('postgres did not start');
  }
}

// The bare compare-and-set with a fencing token: one prepared statement each way.
const NOW = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;
const casTable = (t) => `CREATE TABLE ${t} (resource text COLLATE "C" PRIMARY KEY,
  owner text NOT NULL, token bigint NOT NULL, expires_at bigint NOT NULL)`;
const casAcquire = (t) => `INSERT INTO ${t} AS l VALUES ($1, $2, 1, ${NOW} + $3)
  ON CONFLICT (resource) DO UPDATE
    SET owner = excluded.owner, token = l.token + 1, expires_at = excluded.expires_at
    WHERE l.owner = '' OR l.expires_at < excluded.expires_at - $3
  RETURNING token, expires_at`;
const casRelease = (t) => `UPDATE ${t} SET owner = '', expires_at = 0
  WHERE resource = $1 AND owner = $2 AND token = $3`;

/** The bare compare-and-set on its own table, with pool options and per-query settings. */
function bare(url, table, poolOptions, perQuery) {
  return async () => {
    const pool = new pg.Pool({ connectionString: url, max: POOL, ...poolOptions });
    await pool.query(casTable(table));
    const acquire = { name: `${table}_acquire`, text: casAcquire(table), ...perQuery };
    const release = { name: `${table}_release`, text: casRelease(table), ...perQuery };
    return {
      cycle: async (w) => {
        const resource = `job/${w}`;
        const { rows } = await pool.query({ ...acquire, values: [resource, 'bench', TTL] });
        if (rows.length !== 1) throw new Error(`${table}: not acquired`);
        const done = await pool.query({ ...release, values: [resource, 'bench', rows[0].token] });
        if (done.rowCount !== 1) throw new Error(`${table}: release refused`);
      },
      close: () => pool.end(),
    };
  };
}

/** A contender: `open()` returns `cycle(worker)`, one acquire and one release, and `close()`. */
function contenders(url) {
  const store =
    (lib, table, query = '') =>
    async () => {
      const s = await lib.openStore(`${url}?table=${table}${query}`);
      return {
        cycle: async (w) => {
          const lease = await s.tryAcquire(`job/${w}`, 'bench', TTL);
          if (!lease || !(await s.release(lease))) throw new Error(`${table}: cycle refused`);
        },
        close: () => s.close(),
      };
    };
  const list = {
    leasehold: store(leasehold, 'lh'),
    ...(baseline ? { baseline: store(baseline, 'lh_base') } : {}),
    'leasehold-nonotify': store(leasehold, 'lh_quiet', '&notify=false'),
    cas: bare(url, 'cas', {}, {}),
    // The same with the deadlines every leasehold call carries (a pool wait bounded by
    // connectionTimeoutMillis, a client-side query_timeout, a server-side statement_timeout).
    'cas+deadlines': bare(
      url,
      'cas_deadlines',
      { connectionTimeoutMillis: 5000, statement_timeout: 5000 },
      { query_timeout: 5000 },
    ),
  };
  return list;
}

/** WAL position in bytes and the next transaction id, read without assigning one. */
async function serverMarks(admin) {
  const { rows } = await admin.query(
    `SELECT pg_current_wal_lsn() - '0/0' AS wal,
            pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xid`,
  );
  return { wal: Number(rows[0].wal), xid: Number(rows[0].xid) };
}

/** `inFlight` workers, each cycling its own key, for `ms`; cycles, seconds and server costs. */
async function slice(server, admin, contender, inFlight, ms) {
  const m0 = await serverMarks(admin);
  const cpu0 = serverCpuUs(server.pid);
  const client0 = process.cpuUsage();
  const sent0 = statementsSent;
  let stop = false;
  let cycles = 0;
  setTimeout(() => (stop = true), ms);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async (_, w) => {
      while (!stop) {
        await contender.cycle(w);
        cycles++;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const statements = statementsSent - sent0;
  const cpuUs = serverCpuUs(server.pid) - cpu0;
  const client = process.cpuUsage(client0);
  const clientUs = client.user + client.system;
  const m1 = await serverMarks(admin);
  // The admin's own read does not assign an xid.
  return {
    cycles,
    seconds,
    statements,
    xids: m1.xid - m0.xid - 1,
    wal: m1.wal - m0.wal,
    cpuUs,
    clientUs,
  };
}

/**
 * One round with several in flight: `SLICES` turns in which every contender (in an order shuffled
 * every turn) runs `SECONDS / SLICES`; rate and costs per cycle over its turns.
 */
async function sliced(server, admin, list, inFlight, round) {
  const sums = list.map(() => ({
    cycles: 0,
    seconds: 0,
    statements: 0,
    xids: 0,
    wal: 0,
    cpuUs: 0,
    clientUs: 0,
  }));
  for (let turn = 0; turn < SLICES; turn++) {
    const order = shuffled(list.length, round * SLICES + turn);
    for (let k = 0; k < list.length; k++) {
      const at = order[k];
      const got = await slice(server, admin, list[at], inFlight, (SECONDS * 1000) / SLICES);
      for (const key of Object.keys(got)) sums[at][key] += got[key];
    }
  }
  return sums.map((s) => ({
    rate: s.cycles / s.seconds,
    statements: s.statements / s.cycles,
    xids: s.xids / s.cycles,
    walBytes: s.wal / s.cycles,
    serverCpuUs: s.cpuUs / s.cycles,
    clientCpuUs: s.clientUs / s.cycles,
  }));
}

/**
 * One in flight, contenders taking turns cycle by cycle, in an order shuffled every turn (a fixed
 * cyclic order would have each one always follow the same other one, and inherit its after-effects). Cycles per
 * second over the round, and over its median cycle (`typical`), which a stall of the shared disk
 * or CPU landing on one contender's cycle does not move.
 */
async function interleaved(list) {
  const times = list.map(() => []);
  for (let i = 0; i < CYCLES; i++) {
    const order = shuffled(list.length, i);
    for (let k = 0; k < list.length; k++) {
      const at = order[k];
      const t0 = performance.now();
      await list[at].cycle(0);
      times[at].push(performance.now() - t0);
    }
  }
  return times.map((ms) => ({
    rate: CYCLES / (ms.reduce((a, b) => a + b, 0) / 1000),
    typical: 1000 / median(ms),
  }));
}

/** Per-cycle costs measured alone, one in flight: statements, xids, WAL, NOTIFYs heard. */
async function costs(server, admin, contender, listener) {
  let heard = 0;
  const count = () => heard++;
  listener.on('notification', count);
  const n = 200;
  const m0 = await serverMarks(admin);
  const sent0 = statementsSent;
  for (let i = 0; i < n; i++) await contender.cycle(0);
  const sent = statementsSent - sent0;
  const m1 = await serverMarks(admin);
  await admin.query('SELECT pg_sleep(0.2)'); // notifications arrive after the commit
  listener.off('notification', count);
  return {
    statements: sent / n,
    xids: (m1.xid - m0.xid - 1) / n,
    walBytes: (m1.wal - m0.wal) / n,
    notifies: heard / n,
  };
}

/**
 * How soon a watching peer hears a release: a second store watches, another releases, 50 times;
 * from the release call to the event, beside the release's own round trip.
 */
async function watchLatency(url) {
  const table = 'lh_watched';
  const watcher = await leasehold.PostgresStore.open(url, { table });
  const other = await leasehold.PostgresStore.open(url, { table });
  const heard = new Map();
  const stop = watcher.watch('w/', (event) => heard.get(event.resource)?.());
  // Registered once a release is heard.
  for (let i = 0; ; i++) {
    const got = new Promise((resolve) => heard.set('w/probe', resolve));
    await other.release(await other.tryAcquire('w/probe', 'bench', TTL));
    const ok = await Promise.race([got.then(() => true), sleep(100).then(() => false)]);
    if (ok) break;
    if (i > 100) throw new Error('the watch never heard a release');
  }
  const ms = [];
  for (let i = 0; i < 50; i++) {
    const lease = await other.tryAcquire(`w/${i}`, 'bench', TTL);
    const got = new Promise((resolve) => heard.set(`w/${i}`, resolve));
    const t0 = performance.now();
    await other.release(lease);
    const returned = performance.now();
    await got;
    ms.push([returned - t0, performance.now() - t0]);
  }
  const [calls, events] = [ms.map((m) => m[0]), ms.map((m) => m[1])];
  console.log(
    `\na watching peer hears a release ${fmt(median(events), 2)} ms (max ` +
      `${fmt(Math.max(...events), 2)}) after the release is called, which returns after ` +
      `${fmt(median(calls), 2)} ms (max ${fmt(Math.max(...calls), 2)}); 50 releases`,
  );
  stop();
  await Promise.all([watcher.close(), other.close()]);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The numbers 0 … n − 1 in an order fixed by `seed`. */
function shuffled(n, seed) {
  const out = Array.from({ length: n }, (_, i) => i);
  let state = Math.imul(seed + 1, 2654435761) >>> 0;
  for (let i = n - 1; i > 0; i--) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    const j = (state >>> 16) % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (s.length - 1) * q;
  const lo = Math.floor(at);
  return s[lo] + (s[Math.ceil(at)] - s[lo]) * (at - lo);
};
const median = (xs) => quantile(xs, 0.5);
const fmt = (x, digits = 0) => (Number.isFinite(x) ? x.toFixed(digits) : '-');
const spread = (xs, digits) =>
  `${fmt(median(xs), digits)} (${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)})`;

const server = await startPostgres();
const admin = new pg.Pool({ connectionString: server.url, max: 1 });
const all = contenders(server.url);
const names = Object.keys(all).filter((n) => !argv.only || argv.only.split(',').includes(n));
const opened = {};
try {
  for (const name of names) opened[name] = await all[name]();
  for (const name of names) {
    for (let w = 0; w < Math.max(...IN_FLIGHT); w++) await opened[name].cycle(w); // warm up
  }
  const { rows } = await admin.query(
    `SELECT version() AS v, current_setting('fsync') AS fsync,
            current_setting('synchronous_commit') AS sc, current_setting('wal_level') AS wal`,
  );
  const pgVersion = (await import('pg/package.json', { with: { type: 'json' } })).default.version;
  console.log(
    `${rows[0].v.split(' on ')[0]} (fsync=${rows[0].fsync}, synchronous_commit=${rows[0].sc}, ` +
      `wal_level=${rows[0].wal}), pg ${pgVersion}, node ${process.version}; pools of ${POOL}; ` +
      `${ROUNDS} rounds`,
  );

  // Per-cycle costs, each contender alone, with a plain LISTEN on every table's channel (which
  // registers no waiter: it shows what a release sends when nobody waits).
  const listener = await new pg.Pool({ connectionString: server.url, max: 1 }).connect();
  for (const table of ['lh', 'lh_base', 'lh_quiet'])
    await listener.query(`LISTEN "public.${table}"`);
  console.log('\nper cycle, alone, 1 in flight:');
  for (const name of names) {
    const c = await costs(server, admin, opened[name], listener);
    console.log(
      `${name.padEnd(20)} statements ${fmt(c.statements, 2)}, write xacts ${fmt(c.xids, 2)}, ` +
        `WAL ${fmt(c.walBytes, 0)} B, NOTIFYs heard ${fmt(c.notifies, 2)}`,
    );
  }
  listener.release(true);
  await watchLatency(server.url);

  for (const inFlight of IN_FLIGHT) {
    const results = Object.fromEntries(names.map((n) => [n, []]));
    for (let round = 0; round < ROUNDS; round++) {
      if (inFlight === 1) {
        const rates = await interleaved(names.map((name) => opened[name]));
        names.forEach((name, k) => results[name].push(rates[k]));
        continue;
      }
      const got = await sliced(
        server,
        admin,
        names.map((name) => opened[name]),
        inFlight,
        round,
      );
      names.forEach((name, k) => results[name].push(got[k]));
    }
    const how =
      inFlight === 1
        ? `${CYCLES} interleaved cycles`
        : `${SECONDS} s each in ${SLICES} shuffled turns`;
    console.log(`\n${inFlight} in flight: median (min–max) over ${ROUNDS} rounds of ${how}`);
    for (const name of names) {
      const rs = results[name];
      const ratio = names.includes('cas')
        ? spread(
            rs.map((r, i) => r.rate / results.cas[i].rate),
            3,
          )
        : '-';
      const typical = names.includes('cas')
        ? spread(
            rs.map((r, i) => r.typical / results.cas[i].typical),
            3,
          )
        : '-';
      const extra =
        inFlight === 1
          ? `\n${''.padEnd(20)} by the median cycle: ${spread(
              rs.map((r) => r.typical),
              0,
            )} cycles/s  ×cas ${typical}`
          : `\n${''.padEnd(20)} per cycle: statements ${fmt(median(rs.map((r) => r.statements)), 2)}, ` +
            `write xacts ${fmt(median(rs.map((r) => r.xids)), 2)}, WAL ${fmt(median(rs.map((r) => r.walBytes)), 0)} B, ` +
            `cpu: server ${fmt(median(rs.map((r) => r.serverCpuUs)), 0)} µs, ` +
            `client ${fmt(median(rs.map((r) => r.clientCpuUs)), 0)} µs`;
      console.log(
        `${name.padEnd(20)} ${spread(
          rs.map((r) => r.rate),
          0,
        )} cycles/s  ×cas ${ratio}${extra}`,
      );
    }
  }
} finally {
  for (const c of Object.values(opened)) await c.close().catch(() => undefined);
  await admin.end().catch(() => undefined);
  server.stop();
}
