import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// The layering of design.md, checked on the source: `core` knows no store, and no module
// reaches itself again through its imports, static or lazy (`await import(…)`), type-only or not.

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

/** Imports from `src/core/**` into `src/stores/**`, as `from → to`. */
function coreIntoStores(graph: Map<string, string[]>): string[] {
  return [...graph].flatMap(([from, targets]) =>
    from.startsWith('core/')
      ? targets.filter((to) => to.startsWith('stores/')).map((to) => `${from} → ${to}`)
      : [],
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

  it('has core import no store', () => {
    expect(coreIntoStores(graph)).toEqual([]);
  });

  it('has no cycle', () => {
    expect(findCycle(graph)?.join(' → ')).toBeUndefined();
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
    expect(coreIntoStores(oldGraph)).toEqual(['core/open-store.ts → stores/memory/open.ts']);
    expect(findCycle(oldGraph)).toEqual([
      'core/open-store.ts',
      'stores/memory/open.ts',
      'core/open-store.ts',
    ]);
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
