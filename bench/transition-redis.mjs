// One transition at the store's limit: tryAcquire → release cycles on one key per worker, on one
// private redis-server, beside
//   cas+token    the bare compare-and-set with a fencing token: one small script per transition,
//                a lock key with PX and a token counter that never expires (the baseline);
//   setnx+cad    plain SET NX PX + compare-and-delete, no token;
//   bare-record  leasehold's record and rules in two bare scripts, without the library: what the
//                safety rules cost by themselves;
//   redis-semaphore's Mutex and redlock (neither gives a fencing token);
//   leasehold through a URL (its own connection) and on an ioredis client it was given.
//
//   node bench/transition-redis.mjs [--rounds 30] [--seconds 0.15] [--inflight 1,32] [--only a,b]
//
// With several in flight, a round runs every contender once for `--seconds`, in an order rotated
// from round to round, and measures its costs too (server CPU from INFO cpu, script time from INFO
// commandstats, client CPU). With one in flight the contenders take turns cycle by cycle (about
// 2,000 × `--seconds` cycles each per round), which pairs them far better on a busy machine, and
// the costs come from a slice of one contender at a time after the turns.
// Ratios are taken within a round; their median is reported.
//
// Measures ../dist (run `npm run build` first), or the build LEASEHOLD_DIST=/path/to/dist/index.js
// names; LEASEHOLD_ALT=/path/to/dist/index.js adds a second build (another version) as
// `leasehold-alt`, measured in the same rounds.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import Redlock from 'redlock';

const { values: argv } = parseArgs({
  options: {
    rounds: { type: 'string', default: '30' },
    seconds: { type: 'string', default: '0.15' },
    inflight: { type: 'string', default: '1,32' },
    only: { type: 'string' },
  },
});
const ROUNDS = Number(argv.rounds);
const SECONDS = Number(argv.seconds);
const IN_FLIGHT = argv.inflight.split(',').map(Number);
const TTL = 20_000;
const { openStore, RedisStore } = await import(
  process.env.LEASEHOLD_DIST ?? new URL('../dist/index.js', import.meta.url).href
);

async function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

async function startRedis() {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-bench-transition-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  const child = spawn('redis-server', [...args, '--dir', dir], { stdio: 'ignore' });
  const admin = new Redis({ port, host: '127.0.0.1', lazyConnect: true });
  admin.on('error', () => undefined); // connection attempts before the server listens
  for (let i = 0; ; i++) {
    try {
      await admin.connect();
      break;
    } catch {
      if (i > 100) throw new Error('redis-server did not start');
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const stop = () => {
    admin.disconnect();
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  return { port, admin, stop };
}

// The bare compare-and-set with a fencing token: one script call per transition. The lock key
// expires by itself (PX); the token lives in its own key that never expires.
const CAS_ACQUIRE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. token, 'PX', ARGV[2])
return token
`;
const CAS_RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

// The record and rules of leasehold's scripts, bare (no index, no release notice, no library):
// what the safety rules cost by themselves. Expiry on the server's TIME, a record that never
// expires, release comparing owner and token and keeping the token.
const RECORD_ACQUIRE = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local r = redis.call('HMGET', KEYS[1], 'owner', 'token', 'expiresAt')
if r[1] and r[1] ~= '' and tonumber(r[3]) >= now then return 0 end
local token = (tonumber(r[2]) or 0) + 1
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'token', token, 'expiresAt', now + ARGV[2])
return token
`;
const RECORD_RELEASE = `
local r = redis.call('HMGET', KEYS[1], 'owner', 'token')
if r[1] ~= ARGV[1] or r[2] ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'owner', '', 'expiresAt', 0)
return 1
`;

/**
 * Each contender opens its own connection and gives `cycle(worker)` (one acquire and one release
 * of the worker's key), `close()`, and `top`: the commands it sends itself, whose server time is
 * its script time per cycle.
 */
function contenders(port, alt) {
  const url = `redis://127.0.0.1:${port}`;
  const list = {
    leasehold: async () => {
      const store = await openStore(`${url}?prefix=lh:`);
      return {
        cycle: async (w) => {
          const lease = await store.tryAcquire(`job/${w}`, 'bench', TTL);
          if (!(await store.release(lease))) throw new Error('leasehold: release refused');
        },
        close: () => store.close(),
        top: ['evalsha'],
      };
    },
    'leasehold-given': async () => {
      const redis = new Redis({ port, host: '127.0.0.1' });
      const store = await RedisStore.open(redis, { prefix: 'lg:' });
      return {
        cycle: async (w) => {
          const lease = await store.tryAcquire(`job/${w}`, 'bench', TTL);
          if (!(await store.release(lease))) throw new Error('leasehold: release refused');
        },
        close: async () => {
          await store.close();
          redis.disconnect();
        },
        top: ['evalsha'],
      };
    },
    'cas+token': async () => {
      const redis = new Redis({ port, host: '127.0.0.1' });
      redis.defineCommand('casAcquire', { numberOfKeys: 2, lua: CAS_ACQUIRE });
      redis.defineCommand('casRelease', { numberOfKeys: 1, lua: CAS_RELEASE });
      return {
        cycle: async (w) => {
          const token = await redis.casAcquire(`ct:{${w}}lock`, `ct:{${w}}token`, 'bench', TTL);
          if (token === 0) throw new Error('cas+token: not acquired');
          if ((await redis.casRelease(`ct:{${w}}lock`, `bench:${token}`)) !== 1)
            throw new Error('cas+token: release refused');
        },
        close: async () => redis.disconnect(),
        top: ['evalsha'],
      };
    },
    'bare-record': async () => {
      const redis = new Redis({ port, host: '127.0.0.1' });
      redis.defineCommand('recordAcquire', { numberOfKeys: 1, lua: RECORD_ACQUIRE });
      redis.defineCommand('recordRelease', { numberOfKeys: 1, lua: RECORD_RELEASE });
      return {
        cycle: async (w) => {
          const token = await redis.recordAcquire(`br:${w}`, 'bench', TTL);
          if (token === 0) throw new Error('bare-record: not acquired');
          if ((await redis.recordRelease(`br:${w}`, 'bench', token)) !== 1)
            throw new Error('bare-record: release refused');
        },
        close: async () => redis.disconnect(),
        top: ['evalsha'],
      };
    },
    'setnx+cad': async () => {
      const redis = new Redis({ port, host: '127.0.0.1' });
      redis.defineCommand('casRelease', { numberOfKeys: 1, lua: CAS_RELEASE });
      return {
        cycle: async (w) => {
          if ((await redis.set(`sn:${w}`, 'bench', 'PX', TTL, 'NX')) !== 'OK')
            throw new Error('setnx+cad: not acquired');
          if ((await redis.casRelease(`sn:${w}`, 'bench')) !== 1)
            throw new Error('setnx+cad: release refused');
        },
        close: async () => redis.disconnect(),
        top: ['evalsha', 'set'],
      };
    },
    'redis-semaphore': async () => {
      const redis = new Redis({ port, host: '127.0.0.1' });
      const options = { lockTimeout: TTL, refreshInterval: 0, acquireAttemptsLimit: 1 };
      return {
        cycle: async (w) => {
          const mutex = new Mutex(redis, `rs:${w}`, options);
          if (!(await mutex.tryAcquire())) throw new Error('redis-semaphore: not acquired');
          await mutex.release();
        },
        close: async () => redis.disconnect(),
        top: ['evalsha', 'set'],
      };
    },
    redlock: async () => {
      const redis = new Redis({ port, host: '127.0.0.1' });
      const redlock = new Redlock([redis], { retryCount: 0 });
      return {
        cycle: async (w) => {
          await (await redlock.acquire([`rl:${w}`], TTL)).release();
        },
        close: async () => redis.disconnect(),
        top: ['evalsha', 'eval'],
      };
    },
  };
  if (alt) {
    list['leasehold-alt'] = async () => {
      const store = await alt.openStore(`${url}?prefix=la:`);
      return {
        cycle: async (w) => {
          const lease = await store.tryAcquire(`job/${w}`, 'bench', TTL);
          if (!(await store.release(lease))) throw new Error('leasehold-alt: release refused');
        },
        close: () => store.close(),
        top: ['evalsha'],
      };
    };
  }
  return list;
}

async function serverCpuUs(admin) {
  const info = await admin.info('cpu');
  const field = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)[1]);
  return (field('used_cpu_sys') + field('used_cpu_user')) * 1e6;
}

async function commandStats(admin) {
  const info = await admin.info('commandstats');
  const stats = {};
  for (const [, name, calls, usec] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm))
    stats[name] = { calls: Number(calls), usec: Number(usec) };
  return stats;
}

/** `inFlight` workers, each cycling its own key, for `SECONDS`; cycles per second and costs. */
async function run(admin, contender, inFlight) {
  await admin.config('RESETSTAT');
  const cpu0 = await serverCpuUs(admin);
  const client0 = process.cpuUsage();
  let stop = false;
  let cycles = 0;
  setTimeout(() => (stop = true), SECONDS * 1000); // the workers stop once it has fired
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async (_, w) => {
      while (!stop) {
        await contender.cycle(w);
        cycles++;
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  const client = process.cpuUsage(client0);
  const cpu = (await serverCpuUs(admin)) - cpu0;
  const stats = await commandStats(admin);
  const evalsha = stats.evalsha ?? { calls: 0, usec: 0 };
  const topUsec = contender.top.reduce((sum, name) => sum + (stats[name]?.usec ?? 0), 0);
  return {
    rate: cycles / elapsed,
    serverCpuUs: cpu / cycles,
    scriptUsPerCall: evalsha.calls ? evalsha.usec / evalsha.calls : 0,
    commandUs: topUsec / cycles,
    clientCpuUs: (client.user + client.system) / cycles,
  };
}

/**
 * One in flight, contenders taking turns cycle by cycle (in a new random order every turn), each cycle
 * timed on its own: every contender sees the same moments of machine load, which slices of time
 * cannot promise on a shared machine. The rate is taken at each contender's median cycle time, so
 * a cycle that happened to be preempted by another process does not decide the round.
 */
async function interleaved(list) {
  const times = list.map(() => []);
  const cycles = Math.max(50, Math.round(SECONDS * 2000));
  const order = list.map((_, k) => k);
  for (let i = 0; i < cycles; i++) {
    shuffle(order); // a fixed order would always put the same contender (and its garbage) before another
    for (const at of order) {
      const t0 = performance.now();
      await list[at].cycle(0);
      times[at].push(performance.now() - t0);
    }
  }
  return times.map((ms) => ({ rate: 1000 / quantile(ms, 0.5), meanRate: 1000 / mean(ms) }));
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

function shuffle(xs) {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
}

/** The `q` quantile (0…1) of `xs`, linear between ranks. */
function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  const at = (s.length - 1) * q;
  const lo = Math.floor(at);
  return s[lo] + (s[Math.ceil(at)] - s[lo]) * (at - lo);
}
const median = (xs) => quantile(xs, 0.5);
const fmt = (x, digits = 0) => (Number.isFinite(x) ? x.toFixed(digits) : '-');
/** Median [p25–p75] (min–max). */
const spread = (xs, digits) =>
  `${fmt(median(xs), digits)} [${fmt(quantile(xs, 0.25), digits)}–${fmt(quantile(xs, 0.75), digits)}] (${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)})`;

/** Prints one concurrency's results; ratios are per round, against the bare CAS contenders. */
function report(inFlight, results) {
  const names = Object.keys(results);
  const how = inFlight === 1 ? 'at the median cycle, turns interleaved' : 'slices of time';
  console.log(`\n${inFlight} in flight (${how}): median [p25–p75] (min–max) over ${ROUNDS} rounds`);
  const per = (name, base, f) =>
    names.includes(base) ? results[name].map((r, i) => f(r, results[base][i])) : [NaN];
  const rate = (r, b) => r.rate / b.rate;
  const meanRate = (r, b) => r.meanRate / b.meanRate;
  const cpu = (r, b) => (b.serverCpuUs + b.clientCpuUs) / (r.serverCpuUs + r.clientCpuUs);
  const pad = ''.padEnd(17);
  for (const name of names) {
    const rs = results[name];
    const costs = (field, digits) => fmt(median(rs.map((r) => r[field] ?? NaN)), digits);
    const lines = [
      `${name.padEnd(16)} ${spread(
        rs.map((r) => r.rate),
        0,
      )} cycles/s`,
      `${pad}×cas+token ${spread(per(name, 'cas+token', rate), 3)}   ×setnx+cad ${spread(per(name, 'setnx+cad', rate), 3)}`,
    ];
    if (inFlight === 1) {
      lines.push(
        `${pad}over mean cycle times: ×cas+token ${fmt(median(per(name, 'cas+token', meanRate)), 3)}   ×setnx+cad ${fmt(median(per(name, 'setnx+cad', meanRate)), 3)}`,
      );
    }
    lines.push(
      `${pad}µs per cycle: server cpu ${costs('serverCpuUs', 1)}, commands ${costs('commandUs', 2)} ` +
        `(evalsha ${costs('scriptUsPerCall', 2)}/call), client cpu ${costs('clientCpuUs', 1)}`,
      `${pad}cpu per cycle, cas+token's ÷ this one's: ${spread(per(name, 'cas+token', cpu), 3)}`,
    );
    console.log(lines.join('\n'));
  }
}

const server = await startRedis();
const alt = process.env.LEASEHOLD_ALT ? await import(process.env.LEASEHOLD_ALT) : undefined;
const all = contenders(server.port, alt);
const names = Object.keys(all).filter((n) => !argv.only || argv.only.split(',').includes(n));
const opened = {};
try {
  for (const name of names) opened[name] = await all[name]();
  for (const name of names) {
    for (let w = 0; w < Math.max(...IN_FLIGHT); w++) await opened[name].cycle(w); // warm up
  }
  const { version } = await import('ioredis/package.json', { with: { type: 'json' } }).then(
    (m) => m.default,
    () => ({ version: '?' }),
  );
  const redisVersion = /redis_version:(\S+)/.exec(await server.admin.info('server'))[1];
  console.log(
    `redis ${redisVersion}, ioredis ${version}, node ${process.version}; ${ROUNDS} rounds × ${SECONDS} s per contender`,
  );
  for (const inFlight of IN_FLIGHT) {
    const results = Object.fromEntries(names.map((n) => [n, []]));
    for (let round = 0; round < ROUNDS; round++) {
      if (inFlight === 1) {
        const rates = await interleaved(names.map((name) => opened[name]));
        names.forEach((name, k) => results[name].push(rates[k]));
        for (let k = 0; k < names.length; k++) {
          const name = names[(k + round) % names.length];
          const costs = await run(server.admin, opened[name], 1); // costs need a slice to itself
          delete costs.rate;
          Object.assign(results[name][round], costs);
        }
        continue;
      }
      for (let k = 0; k < names.length; k++) {
        const name = names[(k + round) % names.length];
        results[name].push(await run(server.admin, opened[name], inFlight));
      }
    }
    report(inFlight, results);
  }
} finally {
  for (const c of Object.values(opened)) await c.close().catch(() => undefined);
  server.stop();
}
