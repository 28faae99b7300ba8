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
 * The same names when a block runs, on the SQLite file of its run (`LEASEHOLD_STORE`): a little
 * data, a downstream that takes every write, a store and a client, closed when the block is done.
 * Names left out here (`db`, `pool`, `s3`, …) need a server: a block that uses them is
 * not-run. Run as `node runner.mjs BLOCK`, beside the block, in the package (so `leasehold`
 * is the package itself, built in dist/).
 */
export const READER_RUNTIME = `import { pathToFileURL } from 'node:url';
import { LeaseClient, openStore } from 'leasehold';

const store = await openStore();
const client = new LeaseClient({ store });
Object.assign(globalThis, {
  batches: [['a', 'b'], ['c']],
  writeDownstream: async () => {},
  shards: ['shard-0', 'shard-1', 'shard-2'],
  resources: ['shard-0', 'shard-1', 'shard-2'],
  consume: () => new Promise((done) => setTimeout(done, 10)),
  expectedRate: () => 1,
  ratePerSecond: () => 1,
  id: 'customer-42',
  serve: () => new Promise((done) => setTimeout(done, 10)),
  store,
  client,
});
try {
  await import(pathToFileURL(process.argv[2]).href);
} finally {
  await client.close();
  await store.close();
}
`;
