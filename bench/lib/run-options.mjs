// Command-line options of bench/run.mjs.
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULT_DIST } from './library.mjs';
import { STORE_NAMES } from './servers.mjs';

export const SECTIONS = [
  'transition',
  'renew-many',
  'failover',
  'stop',
  'permits',
  'groups',
  'fair',
  'data',
  'stalls',
];
const DEFAULT_OUT = fileURLToPath(new URL('../results/', import.meta.url));

export const USAGE = `npm run bench [-- options]   (or: npm run build && node --expose-gc bench/run.mjs …)
  --quick              fewer rounds and sizes: the whole run in 2–3 minutes on 2 cores
  --stores LIST        ${STORE_NAMES.join(',')} (default: all)
  --only SECTIONS      ${SECTIONS.join(',')} (default: all)
  --out DIR            where latest.json and latest.md go (default: bench/results)
  --dist DIR           the compiled leasehold to measure (default: ./dist)
  --baseline-dist DIR  another build, measured beside it as "baseline" in the transition section`;

export function parseRunOptions(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      stores: { type: 'string', default: STORE_NAMES.join(',') },
      only: { type: 'string', default: SECTIONS.join(',') },
      out: { type: 'string', default: DEFAULT_OUT },
      dist: { type: 'string', default: DEFAULT_DIST },
      'baseline-dist': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  return {
    quick: values.quick,
    stores: list('stores', values.stores, STORE_NAMES),
    sections: list('only', values.only, SECTIONS),
    out: resolve(values.out),
    dist: resolve(values.dist),
    baselineDist: values['baseline-dist'] ? resolve(values['baseline-dist']) : null,
  };
}

function list(option, text, known) {
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = items.filter((s) => !known.includes(s));
  if (unknown.length > 0 || items.length === 0)
    throw new Error(
      `--${option}: unknown ${unknown.join(', ') || '(empty)'}; known: ${known.join(', ')}`,
    );
  return known.filter((s) => items.includes(s)); // the canonical order
}
