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
