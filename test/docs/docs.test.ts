import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Command, CommanderError } from 'commander';
import { afterAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../../src/index.js';

// The Markdown a newcomer reads is checked like code: its links lead somewhere, its TypeScript
// compiles against the package, its `leasehold` commands exist with the options they show (and
// the harmless ones run), the stores' capabilities table says what the stores declare, and the
// API reference builds.
//
// Markers, on the last non-blank line before a code block:
//   <!-- not-checked: why -->  a ```ts block that is a fragment on purpose (not type-checked)
//   <!-- not-run: why -->      a ```sh block whose commands need a server or do not end by
//                              themselves: its `leasehold` commands are parsed, not run

const ROOT = resolve(import.meta.dirname, '../..');
const MAIN = join(ROOT, 'dist/cli/main.js');

// ---------------------------------------------------------------------------- reading Markdown

interface CodeBlock {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  text: string;
  marker?: { kind: string; reason: string };
}

interface Page {
  file: string;
  /** Lines outside code blocks, with their 1-based numbers. */
  prose: { line: number; text: string }[];
  headings: string[];
  blocks: CodeBlock[];
}

function markdownFiles(): string[] {
  const files = ['README.md', 'CHANGELOG.md'];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (path !== 'docs/api') walk(path);
      } else if (entry.name.endsWith('.md')) files.push(path);
    }
  };
  walk('docs');
  return files;
}

function readPage(file: string): Page {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  const page: Page = { file, prose: [], headings: [], blocks: [] };
  let open: { fence: string; block: CodeBlock; body: string[] } | undefined;
  lines.forEach((text, i) => {
    if (open) {
      if (text.trim() === open.fence) {
        open.block.text = open.body.join('\n');
        page.blocks.push(open.block);
        open = undefined;
      } else open.body.push(text);
      return;
    }
    const fence = /^(```+|~~~+)\s*([\w-]*)/.exec(text);
    if (fence) {
      const block: CodeBlock = { file, line: i + 1, lang: fence[2]!.toLowerCase(), text: '' };
      const before = lines
        .slice(0, i)
        .reverse()
        .find((l) => l.trim() !== '');
      const marker = before && /^<!--\s*(not-[a-z]+):?\s*(.*?)\s*-->$/.exec(before.trim());
      if (marker) block.marker = { kind: marker[1]!, reason: marker[2]! };
      open = { fence: fence[1]!, block, body: [] };
      return;
    }
    page.prose.push({ line: i + 1, text });
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
    if (heading) page.headings.push(heading[1]!);
  });
  if (open) throw new Error(`${file}:${open.block.line}: code block never closed`);
  return page;
}

/** The anchor GitHub gives a heading (github-slugger): `-1`, `-2` … on repeats. */
function slugs(headings: readonly string[]): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const heading of headings) {
    const base = heading
      .replace(/<[^>]*>/g, '')
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/`([^`]*)`/g, '$1')
      .replace(/\*\*([^*]*)\*\*/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

const pages = markdownFiles().map(readPage);
const pageByPath = new Map(pages.map((p) => [resolve(ROOT, p.file), p]));

/** Every marker carries its reason; a kind nobody reads is a typo. */
function markerOf(block: CodeBlock, kind: 'not-checked' | 'not-run'): string | undefined {
  const marker = block.marker;
  if (!marker) return undefined;
  const where = `${block.file}:${block.line}`;
  if (marker.kind !== 'not-checked' && marker.kind !== 'not-run')
    throw new Error(`${where}: unknown marker <!-- ${marker.kind} -->`);
  if (marker.reason === '') throw new Error(`${where}: <!-- ${marker.kind} --> needs a reason`);
  return marker.kind === kind ? marker.reason : undefined;
}

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

/**
 * The reader's own names the examples take as given (their data, their downstream), so that an
 * example needs no lines that would only distract from what it shows. Anything from leasehold, Node
 * or a driver must be imported by the example itself.
 */
const READER_GLOBALS = `import type { S3Client } from '@aws-sdk/client-s3';
import type { HeldLease, LeaseClient, LeaseStore } from 'leasehold';
import type { Pool } from 'pg';

declare global {
  const batches: readonly string[][];
  function writeDownstream(batch: readonly string[], options: { fencingToken: number }): Promise<void>;
  const shards: string[];
  function consume(resource: string, options: { fencingToken: number }): Promise<void>;
  function expectedRate(shard: string): number;
  function ratePerSecond(lease: HeldLease): number;
  const db: { query(sql: string, params: readonly unknown[]): Promise<string[]> };
  const id: string;
  function serve(ids: readonly string[], options: { fencingToken: number }): Promise<void>;
  const store: LeaseStore;
  const client: LeaseClient;
  const lease: HeldLease;
  const pool: Pool;
  function nextWalSegment(): Promise<{ seq: number; bytes: Uint8Array }>;
  const s3: S3Client;
}
export {};
`;

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

/** The words of one shell line and where commands end, enough for the docs' examples. */
function shellCommands(line: string): string[][] {
  const commands: string[][] = [[]];
  let word: string | undefined;
  const end = (): void => {
    if (word !== undefined) commands[commands.length - 1]!.push(word);
    word = undefined;
  };
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'" || c === '"') {
      const close = line.indexOf(c, i + 1);
      if (close < 0) throw new Error(`unclosed quote in: ${line}`);
      word = (word ?? '') + line.slice(i + 1, close);
      i = close;
    } else if (c === '\\' && i + 1 < line.length) {
      word = (word ?? '') + line[++i];
    } else if (c === '#' && word === undefined) {
      break;
    } else if (c === '|' || c === ';' || c === '&') {
      end();
      if (line[i + 1] === c) i++;
      commands.push([]);
    } else if (/\s/.test(c)) {
      end();
    } else word = (word ?? '') + c;
  }
  end();
  // Redirections are the shell's, not the command's.
  return commands
    .map((words) => {
      const out: string[] = [];
      for (let i = 0; i < words.length; i++) {
        if (/^\d*>>?$|^<$/.test(words[i]!)) i++;
        else if (!/^\d*>>?./.test(words[i]!)) out.push(words[i]!);
      }
      return out;
    })
    .filter((words) => words.length > 0);
}

/** `leasehold …` and `npx leasehold …` commands of a shell block, with their arguments. */
function leaseholdCommands(block: CodeBlock): { line: number; args: string[] }[] {
  const found: { line: number; args: string[] }[] = [];
  const lines = block.text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    let text = lines[i]!;
    const first = i;
    while (text.endsWith('\\') && i + 1 < lines.length) text = text.slice(0, -1) + lines[++i];
    for (const words of shellCommands(text.replace(/^\$\s+/, ''))) {
      const start = words[0] === 'npx' ? 1 : 0;
      if (words[start] === 'leasehold')
        found.push({ line: block.line + 1 + first, args: words.slice(start + 1) });
    }
  }
  return found;
}

type Register = (program: Command) => void;

/** The CLI's commands as src/cli/main.ts registers them, read from its imports. */
async function registrations(): Promise<Register[]> {
  const main = readFileSync(join(ROOT, 'src/cli/main.ts'), 'utf8');
  const imports = [
    ...main.matchAll(/import \{ (register\w+) \} from '(\.\/commands\/[\w-]+)\.js';/g),
  ];
  const registers = await Promise.all(
    imports.map(async ([, name, path]) => {
      const module = (await import(
        pathToFileURL(join(ROOT, 'src/cli', `${path!}.ts`)).href
      )) as Record<string, Register>;
      return module[name!]!;
    }),
  );
  const called = (main.match(/^\s+register\w+\(program\);$/gm) ?? []).length;
  expect(registers.length).toBe(called);
  return registers;
}

/** Parses `args` as `leasehold` would, running no action: throws Commander's error when wrong. */
function dryParse(registers: readonly Register[], args: readonly string[]): void {
  const program = new Command('leasehold')
    .exitOverride()
    .configureOutput({ writeOut: () => {}, writeErr: () => {} })
    .version('0.0.0', '-V, --version');
  for (const register of registers) register(program);
  for (const command of program.commands) command.action(() => {});
  try {
    program.parse([...args], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError && error.exitCode === 0) return; // --help, --version
    throw error;
  }
}

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
