import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// The layering of design.md, checked on the source: every import between folders follows an
// arrow of the table below, and no module reaches itself again through its imports, static or
// lazy (`await import(…)`), type-only or not.

const SRC = join(import.meta.dirname, '../../src');

/** Every `.ts` file under `dir`, as paths relative to `src/`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => relative(SRC, join(entry.parentPath, entry.name)));
}

// `from './x.js'` (imports and re-exports, `import type` included), bare `import './x.js'`, and
// `import('./x.js')`. Only relative specifiers: packages are not part of the graph.
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

/** The modules `file` imports, as paths relative to `src/` (`.js` mapped back to `.ts`). */
function importsOf(file: string, text: string): string[] {
  const out = new Set<string>();
  for (const match of text.matchAll(SPECIFIER)) {
    const target = resolve(SRC, dirname(file), match[1]!).replace(/\.js$/, '.ts');
    out.add(relative(SRC, target));
  }
  return [...out];
}

function graphOf(files: string[], read: (file: string) => string): Map<string, string[]> {
  return new Map(files.map((file) => [file, importsOf(file, read(file))]));
}

/** One cycle of the graph as `a → b → … → a`, or `undefined` when there is none (DFS). */
function findCycle(graph: Map<string, string[]>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string[] | undefined => {
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') return [...path.slice(path.indexOf(next)), next];
      if (state.get(next) === undefined && graph.has(next)) {
        const cycle = visit(next);
        if (cycle) return cycle;
      }
    }
    path.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of [...graph.keys()].sort()) {
    if (state.get(node) !== undefined) continue;
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return undefined;
}

/** The dashboard's page script: it runs in a browser, bundled, so it is a layer of its own. */
const PAGE = 'cli/dashboard/page';

/**
 * The layer a module belongs to: its top folder under `src/`, one level deeper under `cli/` and
 * `stores/` (each CLI part and each store is a layer of its own), `.` for the public surface
 * (`index.ts`), `cli/main` for the command's entry, which sits above every CLI part (the other
 * files at the top of `cli/` are helpers every part may use), `cli/dashboard/page` for the page
 * script, which runs in a browser, and `cli/harness/servers`: the private store servers, which
 * the tests and the benchmarks start too.
 */
export function layerOf(file: string): string {
  const parts = file.split('/');
  if (parts.length === 1) return '.';
  if (file === 'cli/main.ts') return 'cli/main';
  if (file.startsWith(`${PAGE}/`)) return PAGE;
  if (file.startsWith('cli/harness/servers/')) return 'cli/harness/servers';
  if (file.startsWith('cli/harness/lab/')) return 'cli/harness/lab';
  if ((parts[0] === 'cli' || parts[0] === 'stores') && parts.length > 2) {
    return `${parts[0]}/${parts[1]}`;
  }
  return parts[0]!;
}

const STORES = [
  'dynamodb',
  'etcd',
  'memory',
  'mysql',
  'nats',
  'postgres',
  'redis',
  's3',
  'sqlite',
  'zookeeper',
];
const CLI_PARTS = ['dashboard', 'demo', 'harness', 'live', 'run', 'verify', 'watch'];

/**
 * Every arrow allowed between layers: a layer imports only from the layers listed beside it (and
 * from itself). Anything else fails, and so does a layer missing from the table, so a new folder
 * takes its place here on purpose. The order is design.md's: `core` at the bottom; `drivers`
 * (helpers around a driver's own objects, shared by a store and a fence) above it; each store
 * knowing core only; `client`, then `fleet`; `fence`; `observability` (the metrics sinks,
 * reading the channels core defines); the public surface; the CLI, whose parts share the
 * helpers at its top and two parts of their own (`live`: watching a store and judging its
 * records, for the dashboard and `watch`; `harness`: what demo and verify both run, their worker
 * processes (which open the store as every command does, through the CLI's helpers), event
 * protocol and history checker (which reads permit names from `core`); `harness/servers`: the
 * private store servers verify starts, which the tests and the benchmarks start too, so they
 * know nothing else of leasehold; `harness/lab`: network namespaces and the replicated stores
 * verify runs in them, built on those servers), and `cli/main` over the commands.
 */
export const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  drivers: [],
  'stores/aws': ['core'],
  ...Object.fromEntries(STORES.map((name) => [`stores/${name}`, ['core']])),
  'stores/postgres': ['core', 'drivers'],
  'stores/dynamodb': ['core', 'stores/aws'],
  'stores/s3': ['core', 'stores/aws'],
  stores: ['core', ...STORES.map((name) => `stores/${name}`)],
  client: ['core'],
  fleet: ['core', 'client'],
  fence: ['core', 'drivers'],
  observability: ['core'],
  testing: ['core'],
  '.': [
    'core',
    'client',
    'fleet',
    'fence',
    'observability',
    'stores',
    ...STORES.map((name) => `stores/${name}`),
  ],
  cli: ['.', 'core', 'client', 'fleet', 'stores', 'stores/sqlite'],
  'cli/live': ['core'],
  'cli/harness': ['.', 'cli', 'core'],
  'cli/harness/servers': [],
  'cli/harness/lab': ['cli/harness/servers'],
  'cli/dashboard': ['cli', 'cli/live', 'core', 'fleet', 'observability'],
  // The browser's part of the dashboard: only what has no imports of Node or of packages, namely
  // the lease-state rule the server judges by (cli/live/lease-state.ts), the types of what the
  // server sends it (cli/live/wire-types.ts, types only) and the record-key marks
  // (core/record-marks.ts); the test below holds it to exactly these.
  [PAGE]: ['cli/live', 'core'],
  'cli/watch': ['cli', 'cli/live', 'core'],
  'cli/demo': ['.', 'cli', 'cli/harness', 'cli/dashboard', 'core'],
  'cli/verify': ['cli', 'cli/harness', 'cli/harness/lab', 'cli/harness/servers', 'core'],
  'cli/run': ['.', 'cli'],
  'cli/commands': ['.', 'cli', 'core', ...CLI_PARTS.map((part) => `cli/${part}`)],
  'cli/main': ['.', 'cli', 'cli/commands', 'cli/run'],
};

/** The imports no row of `allowed` lets through, as `from → to (layer → layer)`. */
function forbidden(
  graph: Map<string, string[]>,
  allowed: Record<string, readonly string[]>,
): string[] {
  return [...graph].flatMap(([from, targets]) => {
    const layer = layerOf(from);
    const row = allowed[layer];
    if (row === undefined) return [`${from}: its layer ${layer} has no row`];
    return targets
      .filter((to) => layerOf(to) !== layer && !row.includes(layerOf(to)))
      .map((to) => `${from} → ${to} (${layer} → ${layerOf(to)})`);
  });
}

/** The allowed arrows no import uses (a row that outlived its reason). */
function unused(
  graph: Map<string, string[]>,
  allowed: Record<string, readonly string[]>,
): string[] {
  const used = new Set<string>();
  for (const [from, targets] of graph) {
    for (const to of targets) used.add(`${layerOf(from)} → ${layerOf(to)}`);
  }
  return Object.entries(allowed).flatMap(([from, row]) =>
    row.map((to) => `${from} → ${to}`).filter((arrow) => !used.has(arrow)),
  );
}

const files = sources(SRC);
const graph = graphOf(files, (file) => readFileSync(join(SRC, file), 'utf8'));

describe('the import graph of src/', () => {
  it('is read from the sources (a sanity check of the parsing)', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(graph.get('index.ts')).toContain('core/errors.ts');
    expect(graph.get('stores/open-store.ts')).toContain('stores/sqlite/open.ts'); // a lazy import
    for (const [from, targets] of graph) {
      for (const to of targets) expect(files, `${from} imports ${to}`).toContain(to);
    }
  });

  it('has only the arrows of the table', () => {
    expect(forbidden(graph, ALLOWED)).toEqual([]);
  });

  it('uses every arrow of the table', () => {
    expect(unused(graph, ALLOWED)).toEqual([]);
  });

  it('has core import no store and nothing above it', () => {
    expect(ALLOWED['core']).toEqual([]);
    for (const store of STORES) expect(ALLOWED[`stores/${store}`]).not.toContain('client');
  });

  it('has no cycle', () => {
    expect(findCycle(graph)?.join(' → ')).toBeUndefined();
  });

  it('has the page script reach only pure modules: its own, the lease-state rule, the wire types, the record marks', () => {
    const reached = new Set<string>();
    const visit = (file: string): void => {
      if (reached.has(file)) return;
      reached.add(file);
      for (const next of graph.get(file) ?? []) visit(next);
    };
    for (const file of files) if (layerOf(file) === PAGE) visit(file);
    expect([...reached].filter((file) => layerOf(file) !== PAGE).sort()).toEqual([
      'cli/live/lease-state.ts',
      'cli/live/wire-types.ts',
      'core/lease.ts',
      'core/record-marks.ts',
    ]);
    // Not a package, not Node: every specifier in what the page reaches is relative.
    const bare = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](?!\.{1,2}\/)([^'"]+)['"]/gm;
    for (const file of reached) {
      const text = readFileSync(join(SRC, file), 'utf8');
      expect(
        [...text.matchAll(bare)].map((m) => m[1]),
        file,
      ).toEqual([]);
    }
  });
});

describe('the checks themselves', () => {
  // The layout before the store URL helpers left the registry: `core/open-store.ts` registered
  // the stores lazily and the stores imported its URL helpers back.
  const old = new Map<string, string>([
    [
      'core/open-store.ts',
      "import { ErrorCode } from './errors.js';\n" +
        "const open = async () => (await import('../stores/memory/open.js')).openMemory;",
    ],
    ['core/errors.ts', 'export const ErrorCode = {};'],
    [
      'stores/memory/open.ts',
      "import { takeParams, type StoreUrl } from '../../core/open-store.js';\n" +
        "import type { MemoryStore } from './memory-store.js';",
    ],
    ['stores/memory/memory-store.ts', "export { x } from '../../core/errors.js';"],
  ]);
  const oldGraph = graphOf([...old.keys()], (file) => old.get(file)!);

  it('find the cycle and the upward import of the old layout', () => {
    expect(forbidden(oldGraph, ALLOWED)).toEqual([
      'core/open-store.ts → stores/memory/open.ts (core → stores/memory)',
    ]);
    expect(findCycle(oldGraph)).toEqual([
      'core/open-store.ts',
      'stores/memory/open.ts',
      'core/open-store.ts',
    ]);
  });

  it('find the arrows that ran up before the layers were enforced', () => {
    const before = new Map<string, string>([
      ['client/heartbeat.ts', "import { x } from '../observability/client-reporter.js';"],
      ['cli/watch/frame.ts', "import { y } from '../dashboard/tracker.js';"],
      ['cli/demo/worker.ts', "import { z } from '../verify/host-clock.js';"],
      ['cli/verify/run-verify.ts', "import { w } from '../demo/downstream.js';"],
      ['tools/new.ts', "import { v } from '../core/errors.js';"],
    ]);
    expect(
      forbidden(
        graphOf([...before.keys()], (f) => before.get(f)!),
        ALLOWED,
      ),
    ).toEqual([
      'client/heartbeat.ts → observability/client-reporter.ts (client → observability)',
      'cli/watch/frame.ts → cli/dashboard/tracker.ts (cli/watch → cli/dashboard)',
      'cli/demo/worker.ts → cli/verify/host-clock.ts (cli/demo → cli/verify)',
      'cli/verify/run-verify.ts → cli/demo/downstream.ts (cli/verify → cli/demo)',
      'tools/new.ts: its layer tools has no row',
    ]);
    expect(layerOf('cli/main.ts')).toBe('cli/main');
    expect(layerOf('cli/format.ts')).toBe('cli');
    expect(layerOf('cli/demo/tour/run-tour.ts')).toBe('cli/demo');
    expect(layerOf('cli/harness/servers/redis-server.ts')).toBe('cli/harness/servers');
    expect(layerOf('cli/harness/host-clock.ts')).toBe('cli/harness');
    expect(layerOf('stores/open-store.ts')).toBe('stores');
    expect(layerOf('index.ts')).toBe('.');
    expect(layerOf('cli/dashboard/page/main.ts')).toBe('cli/dashboard/page');
    expect(layerOf('cli/dashboard/page.ts')).toBe('cli/dashboard');
  });

  it('read static, type-only, re-exported and lazy imports', () => {
    const text = [
      "import { a } from './a.js';",
      "import type { B } from '../b.js';",
      "export { c } from './c.js';",
      "import './d.js';",
      "const e = await import('./e.js');",
      "import { f } from 'node:fs';",
    ].join('\n');
    expect(importsOf('core/x.ts', text).sort()).toEqual([
      'b.ts',
      'core/a.ts',
      'core/c.ts',
      'core/d.ts',
      'core/e.ts',
    ]);
  });
});
