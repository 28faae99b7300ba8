import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Command, CommanderError } from 'commander';
import { expect } from 'vitest';
import { ROOT, type CodeBlock } from './markdown.js';
import { usesServer, type Server } from './servers.js';

/** The words of one shell line and where commands end, enough for the docs' examples. */
export function shellCommands(line: string): string[][] {
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

/** The commands of a shell block, each with its words and the line it starts on. */
export function commandsOf(block: CodeBlock): { line: number; words: string[] }[] {
  const found: { line: number; words: string[] }[] = [];
  const lines = block.text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    let text = lines[i]!;
    const first = i;
    while (text.endsWith('\\') && i + 1 < lines.length) text = text.slice(0, -1) + lines[++i];
    for (const words of shellCommands(text.replace(/^\$\s+/, '')))
      found.push({ line: block.line + 1 + first, words });
  }
  return found;
}

/** `leasehold …` and `npx leasehold …` commands of a shell block, with their arguments. */
export function leaseholdCommands(block: CodeBlock): { line: number; args: string[] }[] {
  return commandsOf(block).flatMap(({ line, words }) => {
    const start = words[0] === 'npx' ? 1 : 0;
    return words[start] === 'leasehold' ? [{ line, args: words.slice(start + 1) }] : [];
  });
}

/** `npm …` commands of a shell block. */
export function npmCommands(block: CodeBlock): { line: number; args: string[] }[] {
  return commandsOf(block).flatMap(({ line, words }) =>
    words[0] === 'npm' ? [{ line, args: words.slice(1) }] : [],
  );
}

interface PackageJson {
  name: string;
  scripts: Record<string, string>;
  peerDependencies: Record<string, string>;
}

/**
 * What is wrong with an `npm …` line of the docs, or `undefined`: a script it runs must be one of
 * package.json's, and a package it installs this one or one of its (optional) peer dependencies.
 * The lines are not run — they install packages or run the whole suite.
 */
export function npmProblem(args: readonly string[]): string | undefined {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;
  const [command, ...rest] = args;
  const operands = rest.filter((a) => !a.startsWith('-'));
  const script = (name: string | undefined): string | undefined =>
    name !== undefined && Object.hasOwn(pkg.scripts, name)
      ? undefined
      : `package.json has no script "${name ?? ''}"`;
  switch (command) {
    case 'ci':
      return operands.length === 0 ? undefined : 'npm ci takes no packages';
    case 'install':
    case 'i': {
      const known = [pkg.name, ...Object.keys(pkg.peerDependencies)];
      const unknown = operands.filter((name) => !known.includes(name));
      return unknown.length === 0
        ? undefined
        : `installs ${unknown.join(', ')}: neither leasehold nor one of its peer dependencies`;
    }
    case 'run':
    case 'run-script':
      return script(operands[0]);
    case 'test':
    case 't':
      return script('test');
    case 'start':
      return script('start');
    default:
      return `npm ${command ?? ''}: the docs test knows npm ci, install, run and test`;
  }
}

export type Register = (program: Command) => void;

/** The CLI's commands as src/cli/main.ts registers them, read from its imports. */
export async function registrations(): Promise<Register[]> {
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
export function dryParse(registers: readonly Register[], args: readonly string[]): void {
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

/** The lines of a shell block as the shell reads them: continuations joined, blanks and comments left out. */
export function shellLines(block: CodeBlock): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  const lines = block.text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const first = i;
    const parts = [lines[i]!];
    while (lines[i]!.endsWith('\\') && i + 1 < lines.length) parts.push(lines[++i]!);
    const text = parts.join('\n');
    if (text.trim() !== '' && !text.trim().startsWith('#'))
      out.push({ line: block.line + 1 + first, text });
  }
  return out;
}

/** `URL`, the docs' word for the reader's store URL, as the store of the run. */
function storeUrl(text: string): string {
  return text.replace(/--store URL\b/g, '--store "$LEASEHOLD_STORE"');
}

/** The `# exit N` comment of a shell line: the exit code the docs say it ends with. */
export function expectedExit(text: string): number | undefined {
  const comment = /(?:^|\s)#\s*exit (\d+)\b[^\n]*$/.exec(text);
  return comment ? Number(comment[1]) : undefined;
}

/**
 * A shell block as a bash script that stops at the first command that fails, `leasehold` being
 * the built CLI: `URL` is the run's store, and a line the docs say ends with `# exit N` must end
 * with exactly N.
 */
export function shellScript(block: CodeBlock, text: string): string {
  const body = storeUrl(text).split('\n');
  // From the last line up, so the indexes above stay right.
  for (const { line, text: command } of shellLines({ ...block, text }).reverse()) {
    const code = expectedExit(command);
    if (code === undefined) continue;
    const first = line - block.line - 1;
    const last = first + command.split('\n').length - 1;
    body.splice(
      last + 1,
      0,
      'status=$?',
      'set -e',
      `[ "$status" = ${code} ] || { echo "${block.file}:${line}: exit $status, the docs say exit ${code}" >&2; exit 1; }`,
    );
    body.splice(first, 0, 'set +e');
  }
  return `set -euo pipefail
leasehold() { "$LEASEHOLD_NODE" "$LEASEHOLD_MAIN" "$@"; }
npx() { if [ "$1" = leasehold ]; then shift; leasehold "$@"; else command npx "$@"; fi; }
${body.join('\n')}
`;
}

/**
 * One line of a block marked run-until-stopped, as a bash script run in a process group of its
 * own: `leasehold` replaces the shell (so a single command is the process that gets SIGTERM),
 * `URL` is the run's store, and a server's fixed port (`--port N`, the dashboard's default 7878,
 * `--dashboard` without a port) is a free one, so the test never collides with a dashboard a
 * reader, or another run, has open. `serves` when the line serves a page (its URL is printed).
 */
export function untilStoppedScript(text: string): { script: string; serves: boolean } {
  let command = storeUrl(text).replace(/--port \d+/g, '--port 0');
  let serves = /--port 0/.test(command);
  if (/\bleasehold dashboard\b/.test(command) && !/--port/.test(command)) {
    command = command.replace(/\bleasehold dashboard\b/, 'leasehold dashboard --port 0');
    serves = true;
  }
  if (/--dashboard(?!\s+\d)/.test(command)) {
    command = command.replace(/--dashboard(?!\s+\d)/, '--dashboard 0');
    serves = true;
  }
  return {
    script: `set -uo pipefail
leasehold() { exec "$LEASEHOLD_NODE" "$LEASEHOLD_MAIN" "$@"; }
${command}
`,
    serves,
  };
}

/** Commands that end by themselves and touch nothing but the store they are given. */
const RUNNABLE = new Set(['init', 'list', 'get', 'acquire', 'release', 'run', 'doctor', 'check']);

/** Commands that serve until stopped (the demo: for long), on nothing but the store they are given. */
const SERVING = new Set(['dashboard', 'watch', 'demo']);

/** Besides `leasehold`, what a block that runs may call. */
const SHELL_RUNNABLE = new Set(['echo', 'jq']);

/**
 * Why the test cannot run a shell block as it is marked, one line each: a command it does not run
 * that way, or a store it does not have.
 */
export function runProblems(
  block: CodeBlock,
  marked: { untilStopped: boolean; needs: readonly Server[] },
): string[] {
  const problems: string[] = [];
  for (const { line, words } of commandsOf(block)) {
    const at = `${block.file}:${line}`;
    const leasehold = words[0] === 'leasehold' || (words[0] === 'npx' && words[1] === 'leasehold');
    if (!leasehold) {
      if (!SHELL_RUNNABLE.has(words[0]!))
        problems.push(
          `${at}: "${words.join(' ')}" is not run by the docs test: mark the block <!-- not-run: why -->`,
        );
      continue;
    }
    const args = words.slice(words.indexOf('leasehold') + 1);
    const command = args.find((a) => !a.startsWith('-')) ?? '';
    if (SERVING.has(command) && !marked.untilStopped)
      problems.push(
        `${at}: "leasehold ${command}" serves until stopped: mark the block <!-- run-until-stopped: why -->`,
      );
    else if (!RUNNABLE.has(command) && !SERVING.has(command) && !args.includes('--help'))
      problems.push(
        `${at}: "leasehold ${command}" needs more than a store: mark the block <!-- not-run: why -->`,
      );
    if (!args.includes('--store')) continue;
    const store = args[args.indexOf('--store') + 1]!;
    const known =
      store === 'URL' ||
      store.startsWith('sqlite:') ||
      marked.needs.some((s) => usesServer(store, s));
    if (!known)
      problems.push(`${at}: a server store needs <!-- needs: … --> or <!-- not-run: why -->`);
  }
  return problems;
}
