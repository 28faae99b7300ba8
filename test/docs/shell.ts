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

/** `leasehold …` and `npx leasehold …` commands of a shell block, with their arguments. */
export function leaseholdCommands(block: CodeBlock): { line: number; args: string[] }[] {
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
