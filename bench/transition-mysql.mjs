// One transition at MariaDB's own limit: leasehold tryAcquire → release cycles (default options)
// beside a bare compare-and-set of the same shape (one prepared INSERT … ON DUPLICATE KEY UPDATE
// with a token column, yielding the token through LAST_INSERT_ID, to acquire; one prepared UPDATE
// to release), at 1 and 32 in flight (each worker on its own key). Median and range over rounds,
// per contender and as its ratio to the bare compare-and-set within the same round. Also what a
// cycle costs the server: commands received (Questions), statements by kind (Com_*), commits,
// redo bytes (Innodb_os_log_written), and server and client CPU.
//
// The server is private (free 127.0.0.1 port, temp folder) and durable as shipped:
// innodb_flush_log_at_trx_commit=1, doublewrite on, the default flush method and buffer pool,
// no binary log (MariaDB's default). Both contenders use a pool of 10 connections (leasehold's
// default).
//
//   npm run build && node bench/transition-mysql.mjs
//     [--rounds 5] [--seconds 2] [--slices 8] [--cycles 400] [--inflight 1,32] [--only a,b]
//
// With 1 in flight the contenders take turns cycle by cycle (`--cycles` each per round); with
// more, each runs `--seconds` per round in `--slices` turns. The order is shuffled every turn, so
// every contender sees the same moments of a shared machine and none always follows the same one.
// LEASEHOLD_DIST=dir measures another build; LEASEHOLD_BASELINE_DIST=dir adds that build as
// `baseline`, so two builds meet in one run.
import { Buffer } from 'node:buffer';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import mysql from 'mysql2/promise';

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
const DATABASE = 'bench';

const distOf = (dir) => pathToFileURL(join(resolve(dir), 'index.js')).href;
const leasehold = await import(
  process.env.LEASEHOLD_DIST ? distOf(process.env.LEASEHOLD_DIST) : '../dist/index.js'
);
const baseline = process.env.LEASEHOLD_BASELINE_DIST
  ? await import(distOf(process.env.LEASEHOLD_BASELINE_DIST))
  : undefined;

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

async function startMariadb() {
  const dir = mkdtempSync(join(tmpdir(), 'lh-bench-mariadb-'));
  const data = join(dir, 'data');
  execFileSync(
    'mariadb-install-db',
    [
      '--no-defaults',
      `--datadir=${data}`,
      '--user=root',
      '--auth-root-authentication-method=normal',
      '--skip-test-db',
    ],
    { stdio: 'ignore' },
  );
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const child = spawn(
      'mariadbd',
      [
        '--no-defaults',
        `--datadir=${data}`,
        '--user=root',
        '--bind-address=127.0.0.1',
        `--port=${port}`,
        `--socket=${join(dir, 'sock')}`,
        `--pid-file=${join(dir, 'pid')}`,
        `--log-error=${join(dir, 'err.log')}`,
        '--skip-name-resolve',
        '--max-connections=200',
      ],
      { stdio: 'ignore' },
    );
    const stop = () => {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    };
    for (let i = 0; i < 300 && child.exitCode === null; i++) {
      try {
        const c = await mysql.createConnection({ host: '127.0.0.1', port, user: 'root' });
        await c.query(`CREATE DATABASE IF NOT EXISTS ${DATABASE}`);
        await c.end();
        return { port, pid: child.pid, stop };
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    child.kill('SIGKILL');
    if (attempt === 3) {
      stop();
      throw new Error('mariadbd did not start');
    }
  }
}

/** CPU time (user + system) of the server process, in µs. */
function serverCpuUs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

// The bare compare-and-set with a fencing token: one prepared statement each way. The token comes
// back as the OK packet's insert id; 0 means refused.
const NOW_MS = `(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)`;
const CAS_TABLE = `CREATE TABLE cas (resource VARBINARY(512) NOT NULL PRIMARY KEY,
                   owner VARBINARY(256) NOT NULL, token BIGINT NOT NULL, expires_at BIGINT NOT NULL)
                   ENGINE=InnoDB`;
const CAS_ACQUIRE = `INSERT INTO cas VALUES (?, ?, LAST_INSERT_ID(1), ${NOW_MS} + ?)
  ON DUPLICATE KEY UPDATE
    token = IF(expires_at < ${NOW_MS}, LAST_INSERT_ID(token + 1), token + LAST_INSERT_ID(0)),
    owner = IF(expires_at < ${NOW_MS}, VALUES(owner), owner),
    expires_at = IF(expires_at < ${NOW_MS}, VALUES(expires_at), expires_at)`;
const CAS_RELEASE = `UPDATE cas SET owner = '', expires_at = 0
  WHERE resource = ? AND owner = ? AND token = ?`;

/** A contender: `open()` returns `cycle(worker)`, one acquire and one release, and `close()`. */
function contenders(port) {
  const url = `mysql://root@127.0.0.1:${port}/${DATABASE}`;
  const store = (lib, table) => async () => {
    const s = await lib.openStore(`${url}?table=${table}`);
    return {
      cycle: async (w) => {
        const lease = await s.tryAcquire(`job/${w}`, 'bench', TTL);
        if (!lease || !(await s.release(lease))) throw new Error(`${table}: cycle refused`);
      },
      close: () => s.close(),
    };
  };
  return {
    leasehold: store(leasehold, 'lh'),
    ...(baseline ? { baseline: store(baseline, 'lh_base') } : {}),
    cas: async () => {
      const pool = mysql.createPool({
        host: '127.0.0.1',
        port,
        user: 'root',
        database: DATABASE,
        connectionLimit: POOL,
        supportBigNumbers: true,
      });
      await pool.query(CAS_TABLE);
      const owner = Buffer.from('bench');
      return {
        cycle: async (w) => {
          const resource = Buffer.from(`job/${w}`);
          const [ok] = await pool.execute(CAS_ACQUIRE, [resource, owner, TTL]);
          const token = Number(ok.insertId);
          if (token === 0) throw new Error('cas: not acquired');
          const [done] = await pool.execute(CAS_RELEASE, [resource, owner, token]);
          if (done.affectedRows !== 1) throw new Error('cas: release refused');
        },
        close: () => pool.end(),
      };
    },
  };
}

const COUNTERS = [
  'Questions',
  'Com_stmt_execute',
  'Com_stmt_prepare',
  'Com_insert',
  'Com_update',
  'Com_select',
  'Com_set_option',
  'Com_begin',
  'Com_commit',
  'Handler_commit',
  'Innodb_os_log_written',
];

async function status(admin) {
  const [rows] = await admin.query(
    `SHOW GLOBAL STATUS WHERE Variable_name IN (${COUNTERS.map(() => '?').join(',')})`,
    COUNTERS,
  );
  return Object.fromEntries(rows.map((r) => [r.Variable_name, Number(r.Value)]));
}

/** Counter deltas per cycle, less the admin's own SHOW STATUS (one Question, no Com_* here). */
function perCycle(s0, s1, cycles) {
  const out = {};
  for (const key of COUNTERS)
    out[key] = (s1[key] - s0[key] - (key === 'Questions' ? 1 : 0)) / cycles;
  return out;
}

/** `inFlight` workers, each cycling its own key, for `ms`; cycles, seconds and server costs. */
async function slice(server, admin, contender, inFlight, ms) {
  const s0 = await status(admin);
  const cpu0 = serverCpuUs(server.pid);
  const client0 = process.cpuUsage();
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
  const cpuUs = serverCpuUs(server.pid) - cpu0;
  const client = process.cpuUsage(client0);
  const s1 = await status(admin);
  return { cycles, seconds, cpuUs, clientUs: client.user + client.system, ...perCycle(s0, s1, 1) };
}

/**
 * One round with several in flight: `SLICES` turns in which every contender (in an order shuffled
 * every turn) runs `SECONDS / SLICES`; rate and costs per cycle over its turns.
 */
async function sliced(server, admin, list, inFlight, round) {
  const sums = list.map(() => ({}));
  for (let turn = 0; turn < SLICES; turn++) {
    const order = shuffled(list.length, round * SLICES + turn);
    for (let k = 0; k < list.length; k++) {
      const at = order[k];
      const got = await slice(server, admin, list[at], inFlight, (SECONDS * 1000) / SLICES);
      for (const [key, value] of Object.entries(got)) sums[at][key] = (sums[at][key] ?? 0) + value;
    }
  }
  return sums.map(({ cycles, seconds, cpuUs, clientUs, ...counts }) => ({
    rate: cycles / seconds,
    serverCpuUs: cpuUs / cycles,
    clientCpuUs: clientUs / cycles,
    ...Object.fromEntries(Object.entries(counts).map(([key, n]) => [key, n / cycles])),
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

/** Per-cycle server counters measured alone, one in flight. */
async function costs(admin, contender) {
  const n = 200;
  const s0 = await status(admin);
  for (let i = 0; i < n; i++) await contender.cycle(0);
  return perCycle(s0, await status(admin), n);
}

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
const counters = (c) =>
  `commands ${fmt(c.Questions, 2)} (prepared executes ${fmt(c.Com_stmt_execute, 2)}, ` +
  `prepares ${fmt(c.Com_stmt_prepare, 2)}), statements: insert ${fmt(c.Com_insert, 2)}, ` +
  `update ${fmt(c.Com_update, 2)}, select ${fmt(c.Com_select, 2)}, set ${fmt(c.Com_set_option, 2)}, ` +
  `begin ${fmt(c.Com_begin, 2)}, commit ${fmt(c.Com_commit, 2)}; ` +
  `handler commits ${fmt(c.Handler_commit, 2)}, redo ${fmt(c.Innodb_os_log_written, 0)} B`;

const server = await startMariadb();
const admin = await mysql.createConnection({
  host: '127.0.0.1',
  port: server.port,
  user: 'root',
  database: DATABASE,
});
const all = contenders(server.port);
const names = Object.keys(all).filter((n) => !argv.only || argv.only.split(',').includes(n));
const opened = {};
try {
  for (const name of names) opened[name] = await all[name]();
  for (const name of names) {
    for (let w = 0; w < Math.max(...IN_FLIGHT); w++) await opened[name].cycle(w); // warm up
  }
  const [[v]] = await admin.query(
    `SELECT VERSION() AS version, @@innodb_flush_log_at_trx_commit AS flush,
            @@innodb_doublewrite AS dw, @@innodb_flush_method AS method, @@log_bin AS binlog,
            @@innodb_buffer_pool_size AS pool`,
  );
  const driver = (await import('mysql2/package.json', { with: { type: 'json' } })).default.version;
  console.log(
    `MariaDB ${v.version} (innodb_flush_log_at_trx_commit=${v.flush}, doublewrite=${v.dw}, ` +
      `flush_method=${v.method}, log_bin=${v.binlog}, buffer pool ${v.pool / 2 ** 20} MB), ` +
      `mysql2 ${driver}, node ${process.version}; pools of ${POOL}; ${ROUNDS} rounds`,
  );

  console.log('\nper cycle, alone, 1 in flight:');
  for (const name of names)
    console.log(`${name.padEnd(12)} ${counters(await costs(admin, opened[name]))}`);

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
          ? `\n${''.padEnd(12)} by the median cycle: ${spread(
              rs.map((r) => r.typical),
              0,
            )} cycles/s  ×cas ${typical}`
          : `\n${''.padEnd(12)} per cycle: questions ${fmt(median(rs.map((r) => r.Questions)), 2)}, ` +
            `redo ${fmt(median(rs.map((r) => r.Innodb_os_log_written)), 0)} B, ` +
            `cpu: server ${fmt(median(rs.map((r) => r.serverCpuUs)), 0)} µs, ` +
            `client ${fmt(median(rs.map((r) => r.clientCpuUs)), 0)} µs`;
      console.log(
        `${name.padEnd(12)} ${spread(
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
