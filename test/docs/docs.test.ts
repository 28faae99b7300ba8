import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../../src/index.js';
import { markdownFiles, markerOf, readPage, ROOT, slugs, type CodeBlock } from './markdown.js';
import { READER_GLOBALS } from './reader-globals.js';
import { dryParse, leaseholdCommands, registrations } from './shell.js';

// The Markdown a newcomer reads is checked like code: its links lead somewhere, its TypeScript
// compiles against the package, its `leasehold` commands exist with the options they show (and
// the harmless ones run), the stores' capabilities table says what the stores declare, and the
// API reference builds.
//
// Markers, on the last non-blank line before a code block:
//   <!-- not-checked: why -->  a ```ts block that is a fragment on purpose (not type-checked)
//   <!-- not-run: why -->      a ```sh block whose commands need a server or do not end by
//                              themselves: its `leasehold` commands are parsed, not run

const MAIN = join(ROOT, 'dist/cli/main.js');

const pages = markdownFiles().map(readPage);
const pageByPath = new Map(pages.map((p) => [resolve(ROOT, p.file), p]));

const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

/** Runs a program to its end; rejects with everything it printed when it fails. */
function run(
  file: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeout: number },
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    execFile(
      file,
      args,
      { cwd: options.cwd ?? ROOT, env: options.env ?? process.env, timeout: options.timeout },
      (error, stdout, stderr) => {
        if (error) fail(new Error(`${error.message}\n${stdout}\n${stderr}`));
        else done({ stdout, stderr });
      },
    );
  });
}

// ---------------------------------------------------------------------------- (a) links

describe('links', () => {
  it('every relative link leads to a file, and every #anchor to a heading', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const page of pages) {
      for (const { line, text } of page.prose) {
        const withoutCode = text.replace(/`[^`]*`/g, '``');
        for (const match of withoutCode.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
          const target = match[1]!;
          if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
          checked++;
          const [path, anchor] = target.split('#', 2) as [string, string | undefined];
          const where = `${page.file}:${line}: ${target}`;
          const full =
            path === '' ? resolve(ROOT, page.file) : resolve(ROOT, dirname(page.file), path);
          if (!full.startsWith(ROOT) || !existsSync(full)) {
            broken.push(`${where} (no such file)`);
            continue;
          }
          if (anchor === undefined) continue;
          const target_page = pageByPath.get(full);
          if (!target_page || statSync(full).isDirectory()) {
            broken.push(`${where} (an anchor into a file that is not a checked page)`);
            continue;
          }
          if (!slugs(target_page.headings).has(anchor)) broken.push(`${where} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
    expect(checked).toBeGreaterThan(50);
  });
});

// ---------------------------------------------------------------------------- (b) TypeScript

describe('TypeScript examples', () => {
  it('type-check against the package source (one tsc run for all)', async () => {
    const blocks = pages.flatMap((p) => p.blocks).filter((b) => /^(ts|typescript)$/.test(b.lang));
    const fragments = blocks.filter((b) => markerOf(b, 'not-checked') !== undefined);
    const checked = blocks.filter((b) => !fragments.includes(b));
    expect(checked.length).toBeGreaterThan(5);

    mkdirSync(join(ROOT, '.tmp'), { recursive: true });
    const dir = mkdtempSync(join(ROOT, '.tmp', 'docs-ts-'));
    scratch.push(dir);
    const names = new Map<string, CodeBlock>();
    checked.forEach((block, i) => {
      const name = `block-${i}.ts`;
      names.set(name, block);
      writeFileSync(join(dir, name), `${block.text}\nexport {};\n`);
    });
    writeFileSync(join(dir, 'reader-globals.ts'), READER_GLOBALS);
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        extends: join(ROOT, 'tsconfig.json'),
        compilerOptions: {
          noEmit: true,
          paths: {
            leasehold: [join(ROOT, 'src/index.ts')],
            'leasehold/testing': [join(ROOT, 'src/testing/index.ts')],
          },
        },
        include: ['*.ts'],
      }),
    );
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
    const errors = await run(process.execPath, [tsc, '-p', dir, '--pretty', 'false'], {
      timeout: 120_000,
    }).then(
      () => [],
      (error: Error) =>
        error.message
          .split('\n')
          .filter((l) => /error TS\d+/.test(l))
          .map((l) => {
            const at = /^(?:.*[/\\])?(block-\d+\.ts)\((\d+),(\d+)\)(.*)$/.exec(l);
            const block = at && names.get(at[1]!);
            return block
              ? `${block.file}:${block.line + Number(at[2])}:${at[3]}${at[4]}`
              : relative(ROOT, l);
          }),
    );
    expect(errors).toEqual([]);
    console.log(
      `docs: ${checked.length} TypeScript blocks type-checked, ${fragments.length} marked not-checked`,
    );
  }, 180_000);
});

// ---------------------------------------------------------------------------- (c) commands

/** Commands that end by themselves and touch nothing but the store they are given. */
const RUNNABLE = new Set(['init', 'list', 'get', 'acquire', 'release', 'run', 'doctor', 'check']);

describe('shell examples', () => {
  const blocks = pages
    .flatMap((p) => p.blocks)
    .filter((b) => /^(sh|bash|shell|console)$/.test(b.lang))
    .map((block) => ({ block, commands: leaseholdCommands(block) }))
    .filter(({ commands }) => commands.length > 0);

  it('every leasehold command parses with the real command definitions', async () => {
    const registers = await registrations();
    const wrong: string[] = [];
    for (const { block, commands } of blocks) {
      markerOf(block, 'not-run');
      for (const { line, args } of commands) {
        try {
          dryParse(registers, args);
        } catch (error) {
          wrong.push(`${block.file}:${line}: leasehold ${args.join(' ')}: ${String(error)}`);
        }
      }
    }
    expect(wrong).toEqual([]);
    expect(blocks.length).toBeGreaterThan(3);
  });

  it('blocks not marked not-run run against a SQLite file in a temporary folder', async () => {
    expect(existsSync(MAIN), 'run `npm run build` first').toBe(true);
    const runnable = blocks.filter(({ block }) => markerOf(block, 'not-run') === undefined);
    for (const { block, commands } of runnable) {
      for (const { line, args } of commands) {
        const where = `${block.file}:${line}`;
        const command = args.find((a) => !a.startsWith('-')) ?? '';
        expect(
          RUNNABLE.has(command) || args.includes('--help'),
          `${where}: "leasehold ${command}" does not end by itself or needs more than a file: mark the block <!-- not-run: why -->`,
        ).toBe(true);
        const store = args[args.indexOf('--store') + 1];
        expect(
          !args.includes('--store') || store!.startsWith('sqlite:'),
          `${where}: a server store needs <!-- not-run: needs … -->`,
        ).toBe(true);
      }
      const dir = mkdtempSync(join(tmpdir(), 'leasehold-docs-'));
      scratch.push(dir);
      const script = `set -euo pipefail
leasehold() { "$LEASEHOLD_NODE" "$LEASEHOLD_MAIN" "$@"; }
npx() { if [ "$1" = leasehold ]; then shift; leasehold "$@"; else command npx "$@"; fi; }
${block.text}
`;
      const env = {
        ...process.env,
        LEASEHOLD_NODE: process.execPath,
        LEASEHOLD_MAIN: MAIN,
        LEASEHOLD_STORE: `sqlite:${join(dir, 'leasehold.db')}`,
      };
      await expect(
        run('bash', ['-c', script], { cwd: dir, env, timeout: 60_000 }).then(() => 'ran'),
        `${block.file}:${block.line}`,
      ).resolves.toBe('ran');
    }
    const parsed = blocks.reduce((n, { commands }) => n + commands.length, 0);
    console.log(
      `docs: ${blocks.length} shell blocks with leasehold commands (${parsed} commands parsed), ` +
        `${runnable.length} run, ${blocks.length - runnable.length} marked not-run`,
    );
    expect(runnable.length).toBeGreaterThan(0);
  }, 120_000);
});

// ---------------------------------------------------------------------------- capabilities

/** The stores of the capabilities table and the file that declares each one's capabilities. */
const STORE_SOURCES: Record<string, string> = {
  SQLite: 'sqlite/sqlite-store.ts',
  PostgreSQL: 'postgres/postgres-store.ts',
  'MySQL / MariaDB': 'mysql/mysql-store.ts',
  Redis: 'redis/redis-store.ts',
  etcd: 'etcd/etcd-store.ts',
  DynamoDB: 'dynamodb/dynamodb-store.ts',
  'NATS JetStream KV': 'nats/nats-store.ts',
  ZooKeeper: 'zookeeper/zookeeper-store.ts',
  S3: 's3/s3-store.ts',
  memory: 'memory/memory-store.ts',
};

/** `key: expression` of a store's `capabilities = Object.freeze({ … })`, comments left out. */
function declaredCapabilities(source: string): Map<string, string> {
  const body = /capabilities(?::[^=]*)?\s*=\s*Object\.freeze\(\{([\s\S]*?)\}\)/.exec(source);
  if (!body) throw new Error('no capabilities = Object.freeze({ … }) found');
  const declared = new Map<string, string>();
  for (const line of body[1]!.split('\n')) {
    const entry = /^\s*(\w+):\s*(.+?),?\s*$/.exec(line.replace(/\/\/.*$/, ''));
    if (entry) declared.set(entry[1]!, entry[2]!);
  }
  return declared;
}

/** What a literal expression says, as the table writes it; `undefined` for anything computed. */
function literal(expression: string | undefined): string | undefined {
  if (expression === undefined) return '—';
  if (expression === 'LIMITS.groupMaxSize') return String(LIMITS.groupMaxSize);
  if (/^'[^']*'$/.test(expression)) return expression.slice(1, -1);
  if (/^(true|false|\d+)$/.test(expression)) return expression;
  return undefined;
}

describe('stores', () => {
  it('the capabilities table says what each store declares', () => {
    const page = pages.find((p) => p.file === 'docs/stores/README.md')!;
    const lines = page.prose.map((p) => p.text);
    const start = lines.findIndex((l) => l === '## Declared capabilities');
    expect(start).toBeGreaterThan(0);
    const rows = lines
      .slice(start)
      .filter((l) => l.startsWith('|'))
      .map((l) =>
        l
          .slice(1, -1)
          .split(' | ')
          .map((c) => c.trim()),
      );
    const keys = rows[0]!.slice(1).map((c) => c.replace(/`/g, ''));
    expect(keys).toEqual(['clock', 'batch', 'watch', 'atomicGroupMax', 'data', 'ordered']);
    const wrong: string[] = [];
    const seen: string[] = [];
    for (const row of rows.slice(2)) {
      const name = row[0]!.replace(/\[([^\]]*)\]\([^)]*\)/, '$1');
      const file = STORE_SOURCES[name];
      if (!file) {
        wrong.push(`a row for ${name}, which the test does not know`);
        continue;
      }
      seen.push(name);
      const declared = declaredCapabilities(readFileSync(join(ROOT, 'src/stores', file), 'utf8'));
      for (const key of declared.keys())
        if (!keys.includes(key)) wrong.push(`${name} declares ${key}, which the table lacks`);
      keys.forEach((key, i) => {
        const cell = row[i + 1]!;
        const expression = declared.get(key);
        const value = literal(expression);
        const shown = /^`([^`]*)`/.exec(cell)?.[1] ?? cell;
        if (value === undefined) {
          // Computed (an option, the deployment): the cell must say on what.
          if (cell === `\`${shown}\``)
            wrong.push(`${name} ${key}: declared as ${expression!}, the cell should say when`);
        } else if (value === '—' ? cell !== '—' : shown !== value) {
          wrong.push(`${name} ${key}: declared ${value}, the table says ${cell}`);
        }
      });
    }
    expect(wrong).toEqual([]);
    expect(seen.sort()).toEqual(Object.keys(STORE_SOURCES).sort());
  });
});

// ---------------------------------------------------------------------------- (d) API reference

describe('API reference', () => {
  it('npm run docs:api builds it with no warning', async () => {
    const out = mkdtempSync(join(tmpdir(), 'leasehold-api-'));
    scratch.push(out);
    const started = performance.now();
    await run('npm', ['run', '--silent', 'docs:api', '--', '--out', out], { timeout: 150_000 });
    expect(existsSync(join(out, 'index.html'))).toBe(true);
    console.log(
      `docs: TypeDoc built the API reference in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  }, 180_000);
});
