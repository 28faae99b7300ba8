// One transition at etcd's own limit: leasehold tryAcquire → release cycles beside a bare
// compare-and-set of the same shape (one Txn with a version compare and a put on an etcd lease to
// acquire, one Txn to release) and etcd3's own Lock and Election, at 1 and 32 in flight (each
// worker on its own key and owner), in rounds whose order rotates (within a round the modes take
// turns in short slices); median and range per mode, and each mode's ratio to the bare
// compare-and-set within the same round. Also the gRPC calls each cycle cost, from the server's
// /metrics, and the CPU time per cycle here and in etcd. Starts a private etcd on free 127.0.0.1
// ports.
//
// Usage: npm run build && node bench/transition-etcd.mjs
//   [--rounds 5] [--seconds 2] [--inflight 1,32] [--modes leasehold,bare,lock,election] [--ttl 20000]
// `--seconds` is each mode's measured time per round, in slices of 250 ms that take turns.
// LEASEHOLD_DIST=dir reads leasehold from another build; LEASEHOLD_BASELINE_DIST=dir adds that
// build as the mode "baseline", so two builds meet in one run.
import { Buffer } from 'node:buffer';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Etcd3 } from 'etcd3';

const { fetch, AbortSignal, clearTimeout } = globalThis;

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
const TTL_S = Math.ceil(TTL_MS / 1000);

const distOf = (dir) => pathToFileURL(join(resolve(dir), 'index.js')).href;
const leasehold = await import(
  process.env.LEASEHOLD_DIST ? distOf(process.env.LEASEHOLD_DIST) : '../dist/index.js'
);
const baseline = process.env.LEASEHOLD_BASELINE_DIST
  ? await import(distOf(process.env.LEASEHOLD_BASELINE_DIST))
  : undefined;
const MODES = arg('modes', `leasehold,${baseline ? 'baseline,' : ''}bare,lock,election`).split(',');

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

/** A private single-member etcd with the test harness's timings, data in memory where possible. */
async function startEtcd() {
  const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'lh-bench-etcd-'));
  const [client, peer] = [await freePort(), await freePort()];
  const child = spawn(
    'etcd',
    [
      ...['--name', 'n1', '--data-dir', join(dir, 'data')],
      ...['--listen-client-urls', `http://127.0.0.1:${client}`],
      ...['--advertise-client-urls', `http://127.0.0.1:${client}`],
      ...['--listen-peer-urls', `http://127.0.0.1:${peer}`],
      ...['--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`],
      ...['--initial-cluster', `n1=http://127.0.0.1:${peer}`, '--initial-cluster-state', 'new'],
      ...['--heartbeat-interval', '10', '--election-timeout', '100'],
      ...['--logger', 'zap', '--log-outputs', 'stderr', '--log-level', 'warn'],
    ],
    { stdio: 'ignore' },
  );
  const endpoint = `127.0.0.1:${client}`;
  /** CPU time etcd has used, in µs (from /proc; clock ticks of 10 ms). */
  const cpuMicros = () => {
    const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  };
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; ; i++) {
    try {
      const response = await fetch(`http://${endpoint}/health`, {
        signal: AbortSignal.timeout(500),
      });
      if ((await response.json()).health === 'true') break;
    } catch {
      // not listening yet
    }
    if (i > 100 || child.exitCode !== null) {
      await stop();
      throw new Error('etcd did not become healthy');
    }
    await new Promise((done) => setTimeout(done, 50));
  }
  return { endpoint, cpuMicros, stop };
}

/** gRPC calls the server has started, by method. */
async function rpcsStarted(endpoint) {
  const text = await (await fetch(`http://${endpoint}/metrics`)).text();
  const out = {};
  for (const [, labels, value] of text.matchAll(/^grpc_server_started_total\{([^}]*)\} (\S+)$/gm)) {
    const method = /grpc_method="([^"]+)"/.exec(labels)[1];
    out[method] = (out[method] ?? 0) + Number(value);
  }
  return out;
}

/**
 * Each mode: `open(prefix, inflight)` makes what its workers share and answers
 * `{ cycle(worker), close() }`; a cycle is one acquire and one release of the worker's own key.
 */
const modes = {
  leasehold: storeMode(leasehold),
  baseline: baseline && storeMode(baseline),
  async bare(endpoint, prefix, inflight) {
    const client = new Etcd3({ hosts: `http://${endpoint}` });
    const leases = await Promise.all(
      Array.from({ length: inflight }, () => client.leaseClient.leaseGrant({ TTL: TTL_S * 10 })),
    );
    const keys = leases.map((_, w) => Buffer.from(`${prefix}k${w}`));
    return {
      async cycle(w) {
        const key = keys[w];
        const acquired = await client.kv.txn({
          compare: [{ key, target: 'Version', result: 'Equal', version: 0 }],
          success: [{ request_put: { key, value: Buffer.from(`o${w}`), lease: leases[w].ID } }],
          failure: [],
        });
        if (!acquired.succeeded) throw new Error(`bare acquire of ${key} refused`);
        const released = await client.kv.txn({
          compare: [
            { key, target: 'Mod', result: 'Equal', mod_revision: acquired.header.revision },
          ],
          success: [{ request_delete_range: { key } }],
          failure: [],
        });
        if (!released.succeeded) throw new Error(`bare release of ${key} refused`);
      },
      close: async () => client.close(),
    };
  },
  async lock(endpoint, prefix) {
    const client = new Etcd3({ hosts: `http://${endpoint}` });
    return {
      async cycle(w) {
        const lock = client.lock(`${prefix}k${w}`).ttl(TTL_S);
        await lock.acquire();
        await lock.release();
      },
      close: async () => client.close(),
    };
  },
  async election(endpoint, prefix) {
    const client = new Etcd3({ hosts: `http://${endpoint}` });
    return {
      async cycle(w) {
        const campaign = client.election(`${prefix}e${w}`, TTL_S).campaign(`o${w}`);
        await campaign.wait();
        await campaign.resign();
      },
      close: async () => client.close(),
    };
  },
};

function storeMode(lib) {
  return async (endpoint, prefix) => {
    const store = await lib.openStore(`etcd://${endpoint}?prefix=${prefix}`);
    return {
      async cycle(w) {
        const lease = await store.tryAcquire(`k${w}`, `o${w}`, TTL_MS);
        if (lease === null) throw new Error(`leasehold acquire of k${w} refused`);
        if (!(await store.release(lease))) throw new Error(`leasehold release of k${w} refused`);
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
 * else the machine does falls on every mode alike. Per mode: cycles per second, and per cycle the
 * gRPC calls etcd started and the CPU time used here and by etcd.
 */
async function round(server, number, inflight) {
  const order = MODES.map((_, i) => MODES[(i + number) % MODES.length]);
  const targets = {};
  const totals = {};
  try {
    for (const mode of order) {
      const prefix = `/bench/${number}/${mode}/${inflight}/`;
      targets[mode] = await modes[mode](server.endpoint, prefix, inflight);
      totals[mode] = { cycles: 0, ms: 0, client: 0, server: 0, calls: {} };
      await slice(targets[mode], inflight, WARMUP_MS);
    }
    for (let i = 0; i < Math.round((SECONDS * 1000) / SLICE_MS); i++) {
      for (const mode of order) {
        const total = totals[mode];
        const before = await rpcsStarted(server.endpoint);
        const client = process.cpuUsage();
        const etcd = server.cpuMicros();
        const { cycles, ms } = await slice(targets[mode], inflight, SLICE_MS);
        const used = process.cpuUsage(client);
        total.server += server.cpuMicros() - etcd;
        total.client += used.user + used.system;
        total.cycles += cycles;
        total.ms += ms;
        const after = await rpcsStarted(server.endpoint);
        for (const [method, n] of Object.entries(after)) {
          const d = n - (before[method] ?? 0);
          if (d > 0) total.calls[method] = (total.calls[method] ?? 0) + d;
        }
      }
    }
  } finally {
    for (const target of Object.values(targets)) await target.close();
  }
  return Object.fromEntries(
    order.map((mode) => {
      const t = totals[mode];
      const perCycle = Object.fromEntries(
        Object.entries(t.calls).map(([method, n]) => [method, n / t.cycles]),
      );
      return [
        mode,
        {
          rate: (t.cycles / t.ms) * 1000,
          perCycle,
          clientCpu: t.client / t.cycles,
          serverCpu: t.server / t.cycles,
        },
      ];
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

const etcd = await startEtcd();
const results = {}; // inflight → mode → [{ rate, perCycle, clientCpu, serverCpu }] by round
try {
  for (let number = 0; number < ROUNDS; number++) {
    for (const inflight of INFLIGHT) {
      const measured = await round(etcd, number, inflight);
      for (const [mode, result] of Object.entries(measured)) {
        ((results[inflight] ??= {})[mode] ??= [])[number] = result;
        console.error(`round ${number + 1}, ${inflight} in flight, ${mode}: ${fmt(result.rate)}/s`);
      }
    }
  }
} finally {
  await etcd.stop();
}

console.log(
  `\netcd ${ROUNDS} rounds × ${SECONDS} s, TTL ${TTL_MS} ms; cycles/s median (range); ratio to bare within each round\n`,
);
console.log(
  `${'in flight'.padEnd(10)}${'mode'.padEnd(11)}${'cycles/s'.padStart(9)}  ${'range'.padEnd(12)}${'÷ bare'.padStart(7)}  ${'range'.padEnd(12)}${'CPU µs/cycle: here'.padEnd(20)}${'etcd'.padEnd(6)}gRPC calls per cycle`,
);
for (const inflight of INFLIGHT) {
  for (const mode of MODES) {
    const runs = results[inflight][mode];
    const rates = runs.map((r) => r.rate);
    const ratios = runs.map((r, i) => r.rate / results[inflight].bare[i].rate);
    const calls = Object.keys(runs[0].perCycle)
      .sort()
      .map((m) => `${m} ${fmt(median(runs.map((r) => r.perCycle[m] ?? 0)), 2)}`)
      .join(', ');
    const here = fmt(median(runs.map((r) => r.clientCpu)));
    const server = fmt(median(runs.map((r) => r.serverCpu)));
    console.log(
      `${String(inflight).padEnd(10)}${mode.padEnd(11)}${fmt(median(rates)).padStart(9)}  ${range(rates).padEnd(12)}${fmt(median(ratios), 2).padStart(7)}  ${range(ratios, 2).padEnd(12)}${here.padStart(18)}  ${server.padEnd(6)}${calls}`,
    );
  }
}
