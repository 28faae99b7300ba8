import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { READER_PLACEHOLDERS } from './reader-globals.js';
import { SERVERS, usesServer, type Server } from './servers.js';

/** The checkout the docs describe. */
export const ROOT = resolve(import.meta.dirname, '../..');

export interface CodeBlock {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  text: string;
  marker?: { kind: string; reason: string };
}

export interface Page {
  file: string;
  /** Lines outside code blocks, with their 1-based numbers. */
  prose: { line: number; text: string }[];
  headings: string[];
  blocks: CodeBlock[];
}

/** README.md, CHANGELOG.md and every page under docs/ but the generated API reference. */
export function markdownFiles(): string[] {
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

/** A page's prose, headings and fenced code blocks, each block with the marker before it. */
export function readPage(file: string): Page {
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
      const marker =
        before &&
        /^<!--\s*(not-[a-z]+|run-until-stopped|needs)\b:?\s*(.*?)\s*-->$/.exec(before.trim());
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
export function slugs(headings: readonly string[]): Set<string> {
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

/** The languages a block may be written in, and how the test checks each. */
const LANGUAGES: Record<string, Language> = {
  ts: 'ts',
  typescript: 'ts',
  js: 'js',
  javascript: 'js',
  sh: 'sh',
  bash: 'sh',
  shell: 'sh',
  console: 'sh',
};
export type Language = 'ts' | 'js' | 'sh';

/** What the test does with a block, from the marker before it. */
export interface Treatment {
  language: Language;
  /**
   * `run` it (after type-checking or parsing it), only check it (`not-run`: type-check a program,
   * parse a shell block's commands) or leave it (`not-checked`: a program that is a fragment on
   * purpose).
   */
  treatment: 'run' | 'not-run' | 'not-checked';
  /** The private servers it runs against (`<!-- needs: postgres -->`); none: a SQLite file. */
  needs: readonly Server[];
  /** It runs until it is stopped (`<!-- run-until-stopped: why -->`): run a while, then SIGTERM. */
  untilStopped: boolean;
}

/**
 * What the test does with a block. The markers are the ones on the line before the block, each
 * with its reason (`needs:` names servers the test starts); a language or a marker the test does
 * not know fails, and so does a marker that no longer fits the block: `needs` a server the block
 * does not use, or `not-run` for want of a server the test can start. A block that leaves a write
 * to the reader (a comment saying "your write") runs on postgres.
 */
export function treatment(block: CodeBlock): Treatment {
  const where = `${block.file}:${block.line}`;
  const language = LANGUAGES[block.lang];
  if (!language)
    throw new Error(
      `${where}: a \`\`\`${block.lang} block, which the docs test does not check ` +
        `(it knows ${Object.keys(LANGUAGES).join(', ')})`,
    );
  const treated = marked(block, where, language);
  const placeholder = READER_PLACEHOLDERS.find((p) => block.text.includes(p.text));
  if (placeholder && treated.treatment === 'run' && !treated.needs.includes('postgres'))
    throw new Error(
      `${where}: ${placeholder.text} is a write on postgres: mark the block <!-- needs: postgres -->`,
    );
  return treated;
}

/** What the marker before `block` says, checked against the block. */
function marked(block: CodeBlock, where: string, language: Language): Treatment {
  const marker = block.marker;
  const run = { language, treatment: 'run', needs: [], untilStopped: false } as const;
  if (!marker) return run;
  const { kind, reason } = marker;
  if (reason === '') throw new Error(`${where}: <!-- ${kind} --> needs a reason`);
  switch (kind) {
    case 'run-until-stopped':
      return { ...run, untilStopped: true };
    case 'needs': {
      const needs = reason.split(/\s*(?:,|\band\b)\s*/);
      for (const server of needs) {
        if (!(SERVERS as readonly string[]).includes(server))
          throw new Error(
            `${where}: <!-- needs: ${reason} -->: the test starts ${SERVERS.join(', ')}`,
          );
        if (!usesServer(block.text, server as Server))
          throw new Error(
            `${where}: <!-- needs: ${reason} -->, but the block does not use ${server}`,
          );
      }
      return { ...run, needs: needs as Server[] };
    }
    case 'not-run': {
      const startable = SERVERS.find((s) => new RegExp(`\\bneeds? ${s}\\b`).test(reason));
      if (startable)
        throw new Error(
          `${where}: the test starts a private ${startable}: mark the block <!-- needs: ${startable} -->`,
        );
      return { language, treatment: 'not-run', needs: [], untilStopped: false };
    }
    case 'not-checked':
      if (language === 'sh')
        throw new Error(`${where}: a shell block is always parsed: mark it <!-- not-run: why -->`);
      return { language, treatment: 'not-checked', needs: [], untilStopped: false };
    default:
      throw new Error(`${where}: unknown marker <!-- ${kind} -->`);
  }
}
