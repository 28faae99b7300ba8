// Command-line options of bench/fleet-scale.mjs (milliseconds everywhere, as in the library), and a
// check of positive numeric options the other bench scripts share.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_DIST } from './library.mjs';

export const USAGE = `node bench/fleet-scale.mjs [options]   (run \`npm run build\` first)
  --stores LIST        sqlite,redis,postgres,etcd,zookeeper,nats (default: sqlite,redis,postgres)
  --scales LIST        NxW,… workers × resources (default 8x10000,20x50000,50x100000)
  --quick              8x10000 only and a 10 s steady window
  --ttl-ms N           lease TTL (default 10000)
  --heartbeat-ms N     renewal period (default 2000)
  --reconcile-ms N     scan period (default 5000)
  --timeout-ms N       give up on a phase after this long (default 120000)
  --steady-ms N        steady-state window (default 60000)
  --check-ms N         pause between convergence checks (default 1000)
  --page-size N        records per list page when the coordinator checks (default 10000)
  --per-process N      managers per worker process, each with its own store connection (default 1)
  --continue           run join and leave even when the cold start did not converge
  --dist DIR           the compiled leasehold to measure (default: ./dist)`;

const FULL_SCALES = '8x10000,20x50000,50x100000';

export function parseOptions(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      stores: { type: 'string', default: 'sqlite,redis,postgres' },
      scales: { type: 'string' },
      quick: { type: 'boolean', default: false },
      'ttl-ms': { type: 'string', default: '10000' },
      'heartbeat-ms': { type: 'string', default: '2000' },
      'reconcile-ms': { type: 'string', default: '5000' },
      'timeout-ms': { type: 'string' },
      'steady-ms': { type: 'string' },
      'check-ms': { type: 'string', default: '1000' },
      'page-size': { type: 'string', default: '10000' },
      'per-process': { type: 'string', default: '1' },
      continue: { type: 'boolean', default: false },
      dist: { type: 'string', default: DEFAULT_DIST },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const quick = values.quick;
  return {
    stores: values.stores.split(',').filter(Boolean),
    scales: parseScales(values.scales ?? (quick ? '8x10000' : FULL_SCALES)),
    quick,
    ttlMs: int('ttl-ms', values['ttl-ms']),
    heartbeatMs: int('heartbeat-ms', values['heartbeat-ms']),
    reconcileMs: int('reconcile-ms', values['reconcile-ms']),
    timeoutMs: int('timeout-ms', values['timeout-ms'] ?? '120000'),
    steadyMs: int('steady-ms', values['steady-ms'] ?? (quick ? '10000' : '60000')),
    checkMs: int('check-ms', values['check-ms']),
    pageSize: int('page-size', values['page-size']),
    perProcess: int('per-process', values['per-process']),
    continueAfterTimeout: values.continue,
    dist: resolve(values.dist),
  };
}

function parseScales(text) {
  return text.split(',').map((item) => {
    const match = /^(\d+)x(\d+)$/.exec(item.trim());
    if (!match) throw new Error(`--scales: "${item}" is not NxW (e.g. 8x10000)`);
    const [workers, resources] = [Number(match[1]), Number(match[2])];
    if (workers < 2 || resources < 1 || resources > 999_999)
      throw new Error(`--scales: "${item}" needs N ≥ 2 (a worker leaves) and 1 ≤ W ≤ 999999`);
    return { workers, resources };
  });
}

function int(name, text) {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`--${name}: "${text}" is not a positive integer`);
  return value;
}

/**
 * The named options of `values` (from `parseArgs`) as numbers, each required to be positive (and a
 * whole number with `integer`): `{ rounds: 9, … }`, or an error naming the first bad one.
 */
export function positiveOptions(values, names, { integer = true } = {}) {
  const out = {};
  for (const name of names) {
    const n = Number(values[name]);
    if (!(n > 0) || (integer && !Number.isInteger(n)))
      throw new Error(`--${name} must be a positive ${integer ? 'integer' : 'number'}`);
    out[name] = n;
  }
  return out;
}
