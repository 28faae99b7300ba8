import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { declaredCapabilities, literal, STORE_SOURCES } from './capabilities.js';
import { markdownFiles, readPage, ROOT, slugs, treatment, type Language } from './markdown.js';
import { run } from './processes.js';
import { inParallel, typeErrors, writeRunnable, writeTypeCheckProject } from './programs.js';
import {
  commandsOf,
  dryParse,
  leaseholdCommands,
  npmCommands,
  npmProblem,
  registrations,
} from './shell.js';

// The Markdown a newcomer reads is checked like code: its links lead somewhere, every code block
// in it is checked by its language and runs here when it can, the stores' capabilities table says
// what the stores declare, and the API reference builds.
//
// Code blocks: ts (typescript) and js (javascript) blocks type-check against the package's source
// and run to their end, exit 0, on a SQLite file in a temporary folder; sh (bash, shell, console)
// blocks have their `leasehold` commands parsed by the CLI's own definitions and their npm lines
// checked against package.json, and run the same way. A block in another language fails. Markers,
// on the last non-blank line before a block, say why it does less:
//   <!-- not-run: why -->      it needs a server or a package leasehold does not install, installs
//                              something, or does not end by itself: checked, not run
//   <!-- not-checked: why -->  a ts or js block that is a fragment on purpose: not checked at all
// The run uses dist/ (`npm test` builds it first).

const MAIN = join(ROOT, 'dist/cli/main.js');

const pages = markdownFiles().map(readPage);
const pageByPath = new Map(pages.map((p) => [resolve(ROOT, p.file), p]));

const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

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

// ---------------------------------------------------------------------------- (b) code blocks

const classified = pages
  .flatMap((p) => p.blocks)
  .map((block) => {
    try {
      return { block, ...treatment(block) };
    } catch (error) {
      return { block, error: (error as Error).message };
    }
  });
const blocks = classified.flatMap((c) => ('error' in c ? [] : [c]));

describe('code blocks', () => {
  it('every block is in a language the test checks, with a marker it knows', () => {
    expect(classified.flatMap((c) => ('error' in c ? [c.error] : []))).toEqual([]);
    const count = (language: Language, kind: string): number =>
      blocks.filter((b) => b.language === language && b.treatment === kind).length;
    const line = (language: Language): string =>
      `${language} ${blocks.filter((b) => b.language === language).length} ` +
      `(${count(language, 'run')} run, ${count(language, 'not-run')} ` +
      `${language === 'sh' ? 'parsed' : 'type-checked'} only` +
      (language === 'sh' ? ')' : `, ${count(language, 'not-checked')} fragments not checked)`);
    console.log(`docs: ${blocks.length} code blocks: ${line('ts')}, ${line('js')}, ${line('sh')}`);
  });
});

// ---------------------------------------------------------------------------- (c) programs

describe('TypeScript and JavaScript examples', () => {
  const programs = blocks.filter((b) => b.language !== 'sh' && b.treatment !== 'not-checked');

  it('type-check against the package source (one tsc run for all)', async () => {
    expect(programs.length).toBeGreaterThan(5);
    mkdirSync(join(ROOT, '.tmp'), { recursive: true });
    const dir = mkdtempSync(join(ROOT, '.tmp', 'docs-ts-'));
    scratch.push(dir);
    const names = writeTypeCheckProject(dir, programs);
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
    const errors = await run(process.execPath, [tsc, '-p', dir, '--pretty', 'false'], {
      timeout: 120_000,
    }).then(
      () => [],
      (error: Error) => typeErrors(error.message, names),
    );
    expect(errors).toEqual([]);
  }, 180_000);

  it('those not marked not-run run to their end on a SQLite file in a temporary folder', async () => {
    expect(existsSync(join(ROOT, 'dist/index.js')), 'run `npm run build` first').toBe(true);
    const runnable = programs.filter((p) => p.treatment === 'run');
    expect(runnable.length).toBeGreaterThan(3);
    mkdirSync(join(ROOT, '.tmp'), { recursive: true });
    const dir = mkdtempSync(join(ROOT, '.tmp', 'docs-run-'));
    scratch.push(dir);
    const modules = writeRunnable(dir, runnable);
    const failed: string[] = [];
    await inParallel([...runnable.keys()], 2, async (i) => {
      const { block } = runnable[i]!;
      const cwd = mkdtempSync(join(tmpdir(), 'leasehold-docs-'));
      scratch.push(cwd);
      const env = { ...process.env, LEASEHOLD_STORE: `sqlite:${join(cwd, 'leasehold.db')}` };
      await run(process.execPath, [join(dir, 'runner.mjs'), modules[i]!], {
        cwd,
        env,
        timeout: 20_000,
      }).catch((error: Error) => failed.push(`${block.file}:${block.line}: ${error.message}`));
    });
    expect(failed).toEqual([]);
  }, 120_000);
});

// ---------------------------------------------------------------------------- (d) commands

/** Commands that end by themselves and touch nothing but the store they are given. */
const RUNNABLE = new Set(['init', 'list', 'get', 'acquire', 'release', 'run', 'doctor', 'check']);

/** Besides `leasehold`, what a block that runs may call. */
const SHELL_RUNNABLE = new Set(['echo']);

describe('shell examples', () => {
  const shell = blocks
    .filter((b) => b.language === 'sh')
    .map((b) => ({ ...b, commands: leaseholdCommands(b.block), npm: npmCommands(b.block) }));

  it('every block has a leasehold or npm command the test checks', () => {
    const empty = shell.filter((b) => b.commands.length + b.npm.length === 0);
    expect(empty.map(({ block }) => `${block.file}:${block.line}`)).toEqual([]);
    expect(shell.length).toBeGreaterThan(3);
  });

  it('every leasehold command parses with the real command definitions', async () => {
    const registers = await registrations();
    const wrong: string[] = [];
    for (const { block, commands } of shell) {
      for (const { line, args } of commands) {
        try {
          dryParse(registers, args);
        } catch (error) {
          wrong.push(`${block.file}:${line}: leasehold ${args.join(' ')}: ${String(error)}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  // npm lines install packages or run the whole suite, so they are not run: the scripts they name
  // must be package.json's, and the packages they install leasehold or one of its peers.
  it('every npm command names a script of package.json, or leasehold and its drivers', () => {
    const wrong = shell.flatMap(({ block, npm }) =>
      npm.flatMap(({ line, args }) => {
        const problem = npmProblem(args);
        return problem ? [`${block.file}:${line}: npm ${args.join(' ')}: ${problem}`] : [];
      }),
    );
    expect(wrong).toEqual([]);
  });

  it('blocks not marked not-run run against a SQLite file in a temporary folder', async () => {
    expect(existsSync(MAIN), 'run `npm run build` first').toBe(true);
    const runnable = shell.filter((b) => b.treatment === 'run');
    for (const { block } of runnable) {
      for (const { line, words } of commandsOf(block)) {
        const where = `${block.file}:${line}`;
        const leasehold =
          words[0] === 'leasehold' || (words[0] === 'npx' && words[1] === 'leasehold');
        expect(
          leasehold || SHELL_RUNNABLE.has(words[0]!),
          `${where}: "${words.join(' ')}" is not run by the docs test: mark the block <!-- not-run: why -->`,
        ).toBe(true);
        if (!leasehold) continue;
        const args = words.slice(words.indexOf('leasehold') + 1);
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
    expect(runnable.length).toBeGreaterThan(0);
  }, 120_000);
});

// ---------------------------------------------------------------------------- capabilities

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

// ---------------------------------------------------------------------------- (e) API reference

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
