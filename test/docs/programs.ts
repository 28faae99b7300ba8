import { writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { transformSync } from 'esbuild';
import { ROOT, type CodeBlock, type Language } from './markdown.js';
import {
  fillPlaceholders,
  READER_GLOBALS,
  READER_PACKAGES,
  READER_RUNTIME,
} from './reader-globals.js';

// The ts and js blocks as programs: one project type-checks them all against the package's source
// (js through checkJs, so JavaScript is checked as JavaScript), and each runnable one is written as
// an ES module beside a runner that gives it the reader's names, in the package's own folder, so
// its `import … from 'leasehold'` is the package itself, built in dist/.

export interface Program {
  block: CodeBlock;
  language: Language;
}

/** The file a block is written to: `.mjs` for JavaScript, `.ts` for TypeScript. */
function fileName(program: Program, i: number): string {
  return `block-${i}.${program.language === 'js' ? 'mjs' : 'ts'}`;
}

/** Writes the type-checking project into `dir`; returns which block each file holds. */
export function writeTypeCheckProject(
  dir: string,
  programs: readonly Program[],
): Map<string, CodeBlock> {
  const names = new Map<string, CodeBlock>();
  programs.forEach((program, i) => {
    const name = fileName(program, i);
    names.set(name, program.block);
    writeFileSync(join(dir, name), `${fillPlaceholders(program.block.text)}\nexport {};\n`);
  });
  writeFileSync(join(dir, 'reader-globals.ts'), READER_GLOBALS);
  writeFileSync(join(dir, 'reader-packages.d.ts'), READER_PACKAGES);
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      extends: join(ROOT, 'tsconfig.json'),
      compilerOptions: {
        noEmit: true,
        allowJs: true,
        checkJs: true,
        paths: {
          leasehold: [join(ROOT, 'src/index.ts')],
          'leasehold/testing': [join(ROOT, 'src/testing/index.ts')],
        },
      },
      include: ['*.ts', '*.mjs'],
    }),
  );
  return names;
}

/**
 * What TypeScript reports in a JavaScript file that JavaScript can only silence with a type
 * annotation: an implicit `any` (7005, 7006, 7031, 7034) and a value typed `unknown` (18046), such as
 * a diagnostics channel's message. A js block is checked for everything else.
 */
const ANNOTATION_ONLY = /error TS(7005|7006|7031|7034|18046):/;

/** tsc's errors, each at the line of the Markdown file it is on. */
export function typeErrors(output: string, names: ReadonlyMap<string, CodeBlock>): string[] {
  return output
    .split('\n')
    .filter((l) => /error TS\d+/.test(l))
    .filter((l) => !(/block-\d+\.mjs\(/.test(l) && ANNOTATION_ONLY.test(l)))
    .map((l) => {
      const at = /^(?:.*[/\\])?(block-\d+\.m?[jt]s)\((\d+),(\d+)\)(.*)$/.exec(l);
      const block = at && names.get(at[1]!);
      return block
        ? `${block.file}:${block.line + Number(at[2])}:${at[3]}${at[4]}`
        : relative(ROOT, l);
    });
}

/** Writes the runner (reader-globals.ts) into `dir`; returns its path. */
export function writeRunner(dir: string): string {
  const file = join(dir, 'runner.mjs');
  writeFileSync(file, READER_RUNTIME);
  return file;
}

/**
 * Writes a program as an ES module into `dir`, beside the runner: the reader's placeholders
 * filled in, `edit` applied (a private server's URLs), TypeScript stripped of its types by
 * esbuild, nothing else changed. Returns its path.
 */
export function writeModule(
  dir: string,
  name: string,
  program: Program,
  edit: (text: string) => string = (text) => text,
): string {
  const file = join(dir, `${name}.mjs`);
  const source = edit(fillPlaceholders(program.block.text));
  const text =
    program.language === 'js'
      ? source
      : transformSync(source, {
          loader: 'ts',
          format: 'esm',
          target: 'node20',
          tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
        }).code;
  writeFileSync(file, text);
  return file;
}

/** `work` over `items`, at most `width` at once (`work` reports its own failures). */
export async function inParallel<T>(
  items: readonly T[],
  width: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
}
