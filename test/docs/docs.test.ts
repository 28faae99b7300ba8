import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { describeServer } from '../harness/describe-server.js';
import { declaredCapabilities, literal, STORE_SOURCES } from './capabilities.js';
import { markdownFiles, readPage, ROOT, slugs, treatment } from './markdown.js';
import type { CodeBlock, Language } from './markdown.js';
import { run } from './processes.js';
import {
  inParallel,
  typeErrors,
  writeModule,
  writeRunner,
  writeTypeCheckProject,
} from './programs.js';
import { costlyNamesIn, READER_SCRIPTS } from './reader-globals.js';
import { lazyServers, serversUnavailable, withServerUrls, type Server } from './servers.js';
import {
  dryParse,
  leaseholdCommands,
  npmCommands,
  npmProblem,
  registrations,
  runProblems,
  shellLines,
  shellScript,
  untilStoppedScript,
} from './shell.js';
import { stopProgram, stopShellLine } from './stopping.js';

// The Markdown a newcomer reads is checked like code: its links lead somewhere, every code block
// in it is checked by its language and runs here when it can, the stores' capabilities table says
// what the stores declare, and the API reference builds.
//
// Code blocks: ts (typescript) and js (javascript) blocks type-check against the package's source
// and run to their end, exit 0, on a SQLite file in a temporary folder; sh (bash, shell, console)
// blocks have their `leasehold` commands parsed by the CLI's own definitions and their npm lines
// checked against package.json, and run the same way (a line ending `# exit N` must exit N). A
// block in another language fails. Markers, on the last non-blank line before a block, say how it
// runs instead, or why it does less:
//   <!-- run-until-stopped: why -->  it does not end by itself: it runs a while on the SQLite
//                                    file, gets SIGTERM (a shell block: each line, to its process
//                                    group), and must end soon after, cleanly, no lease left held
//   <!-- needs: postgres -->         it runs against private servers the test starts once
//                                    (postgres, redis; "redis and postgres"), each block on a
//                                    database of its own, the URLs it shows replaced by theirs
//   <!-- not-run: why -->            it needs a server or a package the test does not have,
//                                    installs something, or runs for long: checked, not run
//   <!-- not-checked: why -->        a ts or js block that is a fragment on purpose: not checked
// A marker that no longer fits fails: `needs` a server the block does not use, `not-run` for want
// of a server the test starts, run-until-stopped on a block that ends by itself.
// The run uses dist/ (`npm test` builds it first).

const MAIN = join(ROOT, 'dist/cli/main.js');

const pages = markdownFiles().map(readPage);
const pageByPath = new Map(pages.map((p) => [resolve(ROOT, p.file), p]));

const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

/**
 * A fresh folder, removed after the file: in the package for modules (so their `leasehold` is the
 * package), else in the system's temporary folder.
 */
function scratchDir(inPackage: boolean): string {
  if (inPackage) mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  const dir = mkdtempSync(
    inPackage ? join(ROOT, '.tmp', 'docs-run-') : join(tmpdir(), 'leasehold-docs-'),
  );
  scratch.push(dir);
  return dir;
}

/** A folder for one shell block to run in, with the reader's own scripts it calls. */
function shellFolder(): string {
  const dir = scratchDir(false);
  for (const [name, text] of Object.entries(READER_SCRIPTS)) {
    writeFileSync(join(dir, name), text);
    chmodSync(join(dir, name), 0o755);
  }
  return dir;
}

const at = (block: CodeBlock): string => `${block.file}:${block.line}`;

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
type Block = (typeof blocks)[number];

/** Blocks that run to their end on a SQLite file, until stopped, or against private servers. */
const toEnd = (b: Block): boolean =>
  b.treatment === 'run' && !b.untilStopped && b.needs.length === 0;
const untilStopped = (b: Block): boolean => b.treatment === 'run' && b.untilStopped;
const onServers = (b: Block): boolean => b.treatment === 'run' && b.needs.length > 0;

describe('code blocks', () => {
  it('every block is in a language the test checks, with a marker it knows and that fits', () => {
    expect(classified.flatMap((c) => ('error' in c ? [c.error] : []))).toEqual([]);
    const of = (language: Language): Block[] => blocks.filter((b) => b.language === language);
    const count = (language: Language, test: (b: Block) => boolean): number =>
      of(language).filter(test).length;
    const line = (language: Language): string =>
      `${language} ${of(language).length} (${count(language, (b) => b.treatment === 'run')} run: ` +
      `${count(language, untilStopped)} until stopped, ${count(language, onServers)} on servers; ` +
      `${count(language, (b) => b.treatment === 'not-run')} ` +
      `${language === 'sh' ? 'parsed' : 'type-checked'} only` +
      (language === 'sh'
        ? ')'
        : `, ${count(language, (b) => b.treatment === 'not-checked')} fragments not checked)`);
    console.log(`docs: ${blocks.length} code blocks: ${line('ts')}, ${line('js')}, ${line('sh')}`);
  });
});

// ---------------------------------------------------------------------------- (c) programs

const programs = blocks.filter((b) => b.language !== 'sh' && b.treatment !== 'not-checked');

describe('TypeScript and JavaScript examples', () => {
  it('type-check against the package source (one tsc run for all)', async () => {
    expect(programs.length).toBeGreaterThan(5);
    const dir = scratchDir(true);
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

  it('those without a marker run to their end on a SQLite file in a temporary folder', async () => {
    expect(existsSync(join(ROOT, 'dist/index.js')), 'run `npm run build` first').toBe(true);
    const runnable = programs.filter(toEnd);
    expect(runnable.length).toBeGreaterThan(3);
    const dir = scratchDir(true);
    const runner = writeRunner(dir);
    const failed: string[] = [];
    await inParallel([...runnable.keys()], 2, async (i) => {
      const { block } = runnable[i]!;
      const module = writeModule(dir, `run-${i}`, runnable[i]!);
      const cwd = scratchDir(false);
      const env = { ...process.env, LEASEHOLD_STORE: `sqlite:${join(cwd, 'leasehold.db')}` };
      await run(process.execPath, [runner, module, ...costlyNamesIn(block.text)], {
        cwd,
        env,
        timeout: 20_000,
      }).catch((error: Error) => failed.push(`${at(block)}: ${error.message}`));
    });
    expect(failed).toEqual([]);
  }, 120_000);

  it('those marked run-until-stopped run until SIGTERM, then end cleanly and release every lease', async () => {
    const runnable = programs.filter(untilStopped);
    expect(runnable.length).toBeGreaterThan(0);
    const dir = scratchDir(true);
    const runner = writeRunner(dir);
    const failed: string[] = [];
    let held = 0;
    await inParallel([...runnable.keys()], 2, async (i) => {
      const { block } = runnable[i]!;
      const module = writeModule(dir, `stop-${i}`, runnable[i]!);
      const args = [module, ...costlyNamesIn(block.text), 'until-stopped'];
      await stopProgram(runner, args, scratchDir(false)).then(
        ({ heldWhenStopped, problems }) => {
          held += heldWhenStopped;
          if (problems.length > 0) failed.push(`${at(block)}: ${problems.join('\n')}`);
        },
        (error: Error) => failed.push(`${at(block)}: ${error.message}`),
      );
    });
    expect(failed).toEqual([]);
    // Else "no lease left held" would prove nothing.
    expect(held, 'leases held by the examples when they were stopped').toBeGreaterThan(0);
  }, 120_000);
});

// ---------------------------------------------------------------------------- (d) commands

describe('shell examples', () => {
  const shell = blocks
    .filter((b) => b.language === 'sh')
    .map((b) => ({ ...b, commands: leaseholdCommands(b.block), npm: npmCommands(b.block) }));

  it('every block has a leasehold or npm command the test checks', () => {
    const empty = shell.filter((b) => b.commands.length + b.npm.length === 0);
    expect(empty.map(({ block }) => at(block))).toEqual([]);
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

  it('every block that runs runs only what the test can run as it is marked', () => {
    expect(
      shell.filter((b) => b.treatment === 'run').flatMap((b) => runProblems(b.block, b)),
    ).toEqual([]);
  });

  it('blocks without a marker run against a SQLite file in a temporary folder', async () => {
    expect(existsSync(MAIN), 'run `npm run build` first').toBe(true);
    const runnable = shell.filter(toEnd);
    for (const { block } of runnable) {
      const dir = shellFolder();
      const env = {
        ...process.env,
        LEASEHOLD_NODE: process.execPath,
        LEASEHOLD_MAIN: MAIN,
        LEASEHOLD_STORE: `sqlite:${join(dir, 'leasehold.db')}`,
      };
      const script = shellScript(block, block.text);
      await expect(
        run('bash', ['-c', script], { cwd: dir, env, timeout: 60_000 }).then(() => 'ran'),
        at(block),
      ).resolves.toBe('ran');
    }
    expect(runnable.length).toBeGreaterThan(0);
  }, 120_000);

  it('blocks marked run-until-stopped: each line runs until SIGTERM to its process group, then ends cleanly', async () => {
    const lines = shell
      .filter(untilStopped)
      .flatMap(({ block }) => shellLines(block).map((line) => ({ block, ...line })));
    expect(lines.length).toBeGreaterThan(0);
    const env = { LEASEHOLD_NODE: process.execPath, LEASEHOLD_MAIN: MAIN };
    const failed: string[] = [];
    await inParallel(lines, 2, async ({ block, line, text }) => {
      const { script, serves } = untilStoppedScript(text);
      await stopShellLine(script, serves, shellFolder(), env).then(
        (problems) =>
          problems.length > 0 && failed.push(`${block.file}:${line}: ${problems.join('\n')}`),
        (error: Error) => failed.push(`${block.file}:${line}: ${error.message}`),
      );
    });
    expect(failed).toEqual([]);
  }, 120_000);
});

// ---------------------------------------------------------------------------- (f) servers

// Started once, only when some block needs a server, while the other tests run.
const needed = new Set<Server>(blocks.filter(onServers).flatMap((b) => b.needs));
const unavailable = needed.size === 0 ? null : serversUnavailable(needed);
const docServers = lazyServers(unavailable === null ? needed : new Set());
afterAll(() => docServers.stop());

describeServer('examples marked needs, on private servers', unavailable, () => {
  it('programs run to their end, and a write they leave to the reader lands', async () => {
    const servers = await docServers.started();
    const runnable = programs.filter(onServers);
    const dir = scratchDir(true);
    const runner = writeRunner(dir);
    const failed: string[] = [];
    await inParallel([...runnable.keys()], 2, async (i) => {
      const { block, needs } = runnable[i]!;
      const urls = await servers.urlsFor(needs);
      const module = writeModule(dir, `server-${i}`, runnable[i]!, (t) => withServerUrls(t, urls));
      const env = { ...process.env, LEASEHOLD_STORE: urls[needs[0]!] };
      const args = [runner, module, ...costlyNamesIn(block.text)];
      try {
        await servers.prepareReaderWrites(urls, block.text);
        await run(process.execPath, args, { cwd: scratchDir(false), env, timeout: 20_000 });
        const landed = await servers.readerWritesLanded(urls, block.text);
        if (landed) failed.push(`${at(block)}: ${landed}`);
      } catch (error) {
        failed.push(`${at(block)}: ${(error as Error).message}`);
      }
    });
    expect(failed).toEqual([]);
  }, 120_000);

  it('shell blocks run, the URLs they show being the private servers', async () => {
    const servers = await docServers.started();
    const runnable = blocks.filter((b) => b.language === 'sh' && onServers(b));
    const failed: string[] = [];
    await inParallel(runnable, 2, async ({ block, needs }) => {
      const urls = await servers.urlsFor(needs);
      const env = {
        ...process.env,
        LEASEHOLD_NODE: process.execPath,
        LEASEHOLD_MAIN: MAIN,
        LEASEHOLD_STORE: urls[needs[0]!],
      };
      const script = shellScript(block, withServerUrls(block.text, urls));
      await run('bash', ['-c', script], { cwd: shellFolder(), env, timeout: 60_000 }).catch(
        (error: Error) => failed.push(`${at(block)}: ${error.message}`),
      );
    });
    expect(failed).toEqual([]);
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
