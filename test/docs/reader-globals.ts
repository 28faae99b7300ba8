/**
 * The reader's own names the examples take as given (their data, their downstream), so that an
 * example needs no lines that would only distract from what it shows. Anything from leasehold, Node
 * or a driver must be imported by the example itself.
 */
export const READER_GLOBALS = `import type { S3Client } from '@aws-sdk/client-s3';
import type { HeldLease, LeaseClient, LeaseStore } from 'leasehold';
import type { Pool } from 'pg';

declare global {
  const batches: readonly string[][];
  function writeDownstream(batch: readonly string[], options: { fencingToken: number }): Promise<void>;
  const shards: string[];
  const resources: string[];
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

/**
 * Packages an example uses that leasehold does not install, declared as far as the examples use
 * them, after the package's own types (pino: `pino(options)`, a logger's level methods and
 * `child`). A block that imports one of them cannot run here: it is marked not-run.
 */
export const READER_PACKAGES = `declare module 'pino' {
  type LogFn = (fields: object, message?: string) => void;
  interface Logger {
    error: LogFn;
    warn: LogFn;
    info: LogFn;
    debug: LogFn;
    child(bindings: Record<string, unknown>): Logger;
  }
  export default function pino(options?: { level?: string }): Logger;
}
`;

/**
 * The reader's parts an example leaves as a comment, filled in before it is checked and run (the
 * page still shows the comment). "your write" is a write of the reader's own: an example with one
 * runs on PostgreSQL, where the test makes the table first and then checks the write landed.
 */
export const READER_PLACEHOLDERS = [
  {
    text: '/* your write */',
    fill: "'INSERT INTO reader_writes DEFAULT VALUES'",
    table: 'CREATE TABLE reader_writes (at timestamptz NOT NULL DEFAULT now())',
    landed: 'SELECT count(*)::int AS n FROM reader_writes',
  },
] as const;

/** `text` with the reader's placeholders filled in. */
export function fillPlaceholders(text: string): string {
  return READER_PLACEHOLDERS.reduce((out, p) => out.split(p.text).join(p.fill), text);
}

/** The reader's own programs a shell example runs, written into the folder it runs in. */
export const READER_SCRIPTS: Readonly<Record<string, string>> = {
  // `leasehold run` gives the command its token for fencing.
  'nightly-report.sh':
    '#!/bin/sh\ntest -n "$LEASEHOLD_TOKEN" && echo "report under token $LEASEHOLD_TOKEN"\n',
};

/**
 * The reader's names that cost something to give (a store opened, a lease acquired, a pool), so
 * a block gets them only when it uses them: `node runner.mjs BLOCK NAMES…`.
 */
export const COSTLY_NAMES = ['store', 'client', 'lease', 'pool'] as const;

/**
 * The costly names `text` uses as the reader's: not as a property (`x.store`), a key (`store:`),
 * or a name the block binds itself (`const lease`, a parameter `onAcquired(lease) {`).
 */
export function costlyNamesIn(text: string): string[] {
  return COSTLY_NAMES.filter(
    (name) => new RegExp(`(?<![.\\w])${name}\\b(?!\\s*:)`).test(text) && !binds(text, name),
  );
}

/** Whether `text` binds `name` itself: a declaration, or a parameter of a function or an arrow. */
function binds(text: string, name: string): boolean {
  const declared = new RegExp(`\\b(?:const|let|var|function|class)\\s+${name}\\b|\\b${name}\\s*=>`);
  if (declared.test(text)) return true;
  // A parameter list, `(a, { b, lease })`, is followed by `=>` or a body (a return type between).
  const lists =
    /(?<!\b(?:if|for|while|switch|catch|return)\s*)\(([^()]*)\)(?:\s*:[^;{}]*?)?\s*(?:=>|\{)/g;
  const param = new RegExp(`(?:^|[\\s,{[])${name}\\s*(?:$|[,}\\]=:?])`);
  return [...text.matchAll(lists)].some((list) => param.test(list[1]!));
}

/** What the runner prints once a block marked run-until-stopped is running (its module evaluated). */
export const RUNNING_LINE = 'leasehold-docs: the block is running';

/**
 * The same names when a block runs, on the store of its run (`LEASEHOLD_STORE`: a SQLite file in
 * a temporary folder, or a private server's database): a little data, a downstream that takes
 * every write, and, when the block uses them, a store, a client, a lease acquired on it
 * (`your-resource`) and a node-postgres pool on the same database. A block that runs to its end
 * has them closed after it; one marked run-until-stopped keeps them until its process is stopped.
 * Names left out here (`db`, `s3`, …) need what the test does not have: a block that uses them is
 * not-run. Run as `node runner.mjs BLOCK [NAME…] [until-stopped]`, beside the block, in the
 * package (so `leasehold` is the package itself, built in dist/).
 */
export const READER_RUNTIME = `import { pathToFileURL } from 'node:url';
import { LeaseClient, openStore } from 'leasehold';

const [block, ...rest] = process.argv.slice(2);
const untilStopped = rest.includes('until-stopped');
const uses = new Set(rest);
const closing = [];
const names = {
  batches: [['a', 'b'], ['c']],
  writeDownstream: async () => {},
  shards: ['shard-0', 'shard-1', 'shard-2'],
  resources: ['shard-0', 'shard-1', 'shard-2'],
  consume: () => new Promise((done) => setTimeout(done, 10)),
  expectedRate: () => 1,
  ratePerSecond: () => 1,
  id: 'customer-42',
  serve: () => new Promise((done) => setTimeout(done, 10)),
};
if (uses.has('store') || uses.has('client') || uses.has('lease')) {
  const store = (names.store = await openStore());
  closing.push(() => store.close());
}
if (uses.has('client') || uses.has('lease')) {
  const client = (names.client = new LeaseClient({ store: names.store }));
  closing.unshift(() => client.close());
  if (uses.has('lease')) names.lease = await client.acquire('your-resource');
}
if (uses.has('pool')) {
  const url = process.env.LEASEHOLD_STORE ?? '';
  if (!/^postgres(ql)?:/.test(url)) throw new Error('pool: mark the block <!-- needs: postgres -->');
  const { default: pg } = await import('pg');
  const pool = (names.pool = new pg.Pool({ connectionString: url }));
  closing.push(() => pool.end());
}
Object.assign(globalThis, names);
if (untilStopped) {
  await import(pathToFileURL(block).href);
  console.log(${JSON.stringify(RUNNING_LINE)});
} else {
  try {
    await import(pathToFileURL(block).href);
  } finally {
    for (const close of closing) await close();
  }
}
`;
