// One transition at DynamoDB's own limit (on dynalite, in this process): leasehold tryAcquire →
// release cycles beside a bare compare-and-set of the same shape written here (one conditional
// UpdateItem that takes an absent, released or expired item and bumps its token, one conditional
// UpdateItem that gives it back), at 1 and 32 in flight (each worker on its own key and owner), in
// rounds whose order rotates (within a round the modes take turns in short slices); median and
// range per mode, each mode's ratio to the bare compare-and-set within the same round, and the
// CPU time per cycle of this process. No peer runs here: `dynamodb-lock-client` is not a
// dependency of this package.
//
// Usage: npm run build && node bench/transition-dynamodb.mjs
//   [--rounds 5] [--seconds 2] [--inflight 1,32] [--modes leasehold,bare] [--ttl 20000]
//   [--server inline|process]
// LEASEHOLD_DIST=dir reads leasehold from another build; LEASEHOLD_BASELINE_DIST=dir adds that
// build as the mode "baseline", so two builds meet in one run. `--server process` runs dynalite
// in a child process instead, so the server's work does not share this event loop. `--seconds` is
// each mode's measured time per round, in slices of 250 ms that take turns. For a CPU profile of
// one mode: node --cpu-prof bench/transition-dynamodb.mjs --modes leasehold,bare ...
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';

const { fetch, AbortSignal, clearTimeout } = globalThis;

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const require = createRequire(import.meta.url);

const args = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i === -1 || args[i + 1] === undefined ? fallback : args[i + 1];
};
const ROUNDS = Number(arg('rounds', 5));
const SECONDS = Number(arg('seconds', 2));
const WARMUP_MS = 300;
const SLICE_MS = 250;
const INFLIGHT = arg('inflight', '1,32').split(',').map(Number);
const TTL_MS = Number(arg('ttl', 20_000));
const SKEW_MS = 1000;
const SERVER = arg('server', 'inline');
const TABLE = 'bench_leases';

const distOf = (dir) => pathToFileURL(join(resolve(dir), 'index.js')).href;
const leasehold = await import(
  process.env.LEASEHOLD_DIST ? distOf(process.env.LEASEHOLD_DIST) : '../dist/index.js'
);
const baseline = process.env.LEASEHOLD_BASELINE_DIST
  ? await import(distOf(process.env.LEASEHOLD_BASELINE_DIST))
  : undefined;
const MODES = arg('modes', `leasehold,${baseline ? 'baseline,' : ''}bare`).split(',');

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

const TIMINGS = { createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 };

/** dynalite on a free 127.0.0.1 port, in this process or a child. */
async function startDynalite() {
  if (SERVER === 'inline') {
    const server = require('dynalite')(TIMINGS);
    await new Promise((done, fail) => {
      server.once('error', fail);
      server.listen(0, '127.0.0.1', done);
    });
    return {
      endpoint: `http://127.0.0.1:${server.address().port}`,
      stop: () =>
        new Promise((done) => {
          server.close(done);
          server.closeAllConnections();
        }),
    };
  }
  const port = await freePort();
  const cli = require.resolve('dynalite/cli.js');
  const flags = Object.entries(TIMINGS).flatMap(([k, v]) => [`--${k}`, String(v)]);
  const child = fork(cli, ['--host', '127.0.0.1', '--port', String(port), ...flags], {
    stdio: 'ignore',
  });
  const endpoint = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      await fetch(endpoint, { signal: AbortSignal.timeout(500) });
      break;
    } catch {
      if (i > 100 || child.exitCode !== null) throw new Error('dynalite did not start');
      await new Promise((done) => setTimeout(done, 50));
    }
  }
  return {
    endpoint,
    stop: async () => {
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };
const urlOf = (endpoint) =>
  `dynamodb://${TABLE}?endpoint=${encodeURIComponent(endpoint)}&region=us-east-1`;

/**
 * Each mode: `open(endpoint, prefix, inflight)` makes what its workers share and answers
 * `{ cycle(worker), close() }`; a cycle is one acquire and one release of the worker's own key.
 */
const modes = {
  leasehold: storeMode(leasehold),
  baseline: baseline && storeMode(baseline),
  async bare(endpoint, prefix) {
    const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials });
    const names = { '#o': 'owner', '#e': 'expiresAt', '#t': 'token' };
    return {
      async cycle(w) {
        const Key = { resource: { S: `${prefix}k${w}` } };
        const owner = { S: `o${w}` };
        const now = Date.now();
        const acquired = await client.send(
          new UpdateItemCommand({
            TableName: TABLE,
            Key,
            UpdateExpression: 'SET #o = :o, #e = :e ADD #t :one',
            ConditionExpression: 'attribute_not_exists(#e) OR #e < :cutoff',
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: {
              ':o': owner,
              ':e': { N: String(now + TTL_MS) },
              ':one': { N: '1' },
              ':cutoff': { N: String(now - SKEW_MS) },
            },
            ReturnValues: 'UPDATED_NEW',
          }),
        );
        await client.send(
          new UpdateItemCommand({
            TableName: TABLE,
            Key,
            UpdateExpression: 'SET #o = :empty, #e = :zero',
            ConditionExpression: '#o = :o AND #t = :t',
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: {
              ':o': owner,
              ':t': acquired.Attributes.token,
              ':empty': { S: '' },
              ':zero': { N: '0' },
            },
          }),
        );
      },
      close: async () => client.destroy(),
    };
  },
};

function storeMode(lib) {
  return async (endpoint, prefix) => {
    const store = await lib.openStore(urlOf(endpoint));
    return {
      async cycle(w) {
        const lease = await store.tryAcquire(`${prefix}k${w}`, `o${w}`, TTL_MS);
        if (lease === null) throw new Error(`leasehold acquire of ${prefix}k${w} refused`);
        if (!(await store.release(lease))) throw new Error(`leasehold release refused`);
      },
      close: () => store.close(),
    };
  };
}

/** Runs `inflight` workers on `target` for about `ms`; the cycles they finished, and how long. */
async function slice(target, inflight, ms) {
  let stop = false;
  let cycles = 0;
  const started = performance.now();
  const timer = setTimeout(() => (stop = true), ms);
  const worker = async (w) => {
    while (!stop) {
      await target.cycle(w);
      cycles++;
    }
  };
  await Promise.all(Array.from({ length: inflight }, (_, w) => worker(w)));
  clearTimeout(timer);
  return { cycles, ms: performance.now() - started };
}

/**
 * One round at one concurrency: every mode's target is opened and warmed up, then the modes take
 * turns in slices of `SLICE_MS` (in the round's order) until each has run `SECONDS`, so whatever
 * else the machine does falls on every mode alike. Per mode: cycles per second, and the CPU time
 * this process used per cycle (dynalite's too when it runs here).
 */
async function round(endpoint, number, inflight) {
  const order = MODES.map((_, i) => MODES[(i + number) % MODES.length]);
  const targets = {};
  const totals = {};
  try {
    for (const mode of order) {
      targets[mode] = await modes[mode](endpoint, `b${number}/${mode}/${inflight}/`, inflight);
      totals[mode] = { cycles: 0, ms: 0, cpu: 0 };
      await slice(targets[mode], inflight, WARMUP_MS);
    }
    for (let i = 0; i < Math.round((SECONDS * 1000) / SLICE_MS); i++) {
      for (const mode of order) {
        const total = totals[mode];
        const cpu = process.cpuUsage();
        const { cycles, ms } = await slice(targets[mode], inflight, SLICE_MS);
        const used = process.cpuUsage(cpu);
        total.cpu += used.user + used.system;
        total.cycles += cycles;
        total.ms += ms;
      }
    }
  } finally {
    for (const target of Object.values(targets)) await target.close();
  }
  return Object.fromEntries(
    order.map((mode) => {
      const t = totals[mode];
      return [mode, { rate: (t.cycles / t.ms) * 1000, cpu: t.cpu / t.cycles }];
    }),
  );
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const fmt = (x, digits = 0) => x.toFixed(digits);
const range = (xs, digits = 0) => `${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)}`;

const server = await startDynalite();
const results = {}; // inflight → mode → [{ rate, cpu }] by round
try {
  const setup = await leasehold.openStore(`${urlOf(server.endpoint)}&createTable=true`);
  await setup.close();
  for (let number = 0; number < ROUNDS; number++) {
    for (const inflight of INFLIGHT) {
      const measured = await round(server.endpoint, number, inflight);
      for (const [mode, result] of Object.entries(measured)) {
        ((results[inflight] ??= {})[mode] ??= [])[number] = result;
        console.error(`round ${number + 1}, ${inflight} in flight, ${mode}: ${fmt(result.rate)}/s`);
      }
    }
  }
} finally {
  await server.stop();
}

console.log(
  `\nDynamoDB (dynalite, ${SERVER}) ${ROUNDS} rounds × ${SECONDS} s, TTL ${TTL_MS} ms; cycles/s median (range); ratio to bare within each round\n`,
);
console.log(
  `${'in flight'.padEnd(10)}${'mode'.padEnd(11)}${'cycles/s'.padStart(9)}  ${'range'.padEnd(12)}${'÷ bare'.padStart(7)}  ${'range'.padEnd(12)}CPU µs/cycle`,
);
for (const inflight of INFLIGHT) {
  for (const mode of MODES) {
    const runs = results[inflight][mode];
    const rates = runs.map((r) => r.rate);
    const ratios = runs.map((r, i) => r.rate / results[inflight].bare[i].rate);
    const cpu = fmt(median(runs.map((r) => r.cpu)));
    console.log(
      `${String(inflight).padEnd(10)}${mode.padEnd(11)}${fmt(median(rates)).padStart(9)}  ${range(rates).padEnd(12)}${fmt(median(ratios), 2).padStart(7)}  ${range(ratios, 2).padEnd(12)}${cpu.padStart(12)}`,
    );
  }
}
console.log('\npeers: none run (dynamodb-lock-client is not installed, and nothing is added here)');
