import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Command, CommanderError } from 'commander';
import { expect } from 'vitest';
import { ROOT, type CodeBlock } from './markdown.js';

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
