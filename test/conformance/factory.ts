import type { LeaseStore } from '../../src/index.js';

/** How the conformance suite gets a store of one kind. Every adapter adds one to `stores.ts`. */
export interface StoreFactory {
  readonly name: string;
  /** Why this store cannot run here (a missing server binary), or `null` when it can. */
  unavailable(): string | null;
  /** Starts what the store needs (a real server on a free loopback port). Once per test file. */
  setup(): Promise<void>;
  /** A store over `namespace` (a table, a key prefix): the same namespace reaches the same records. */
  open(namespace: string): Promise<LeaseStore>;
  teardown(): Promise<void>;
  /** Records survive closing the store and opening it again. */
  readonly durable: boolean;
  /**
   * The shortest TTL the store can expire promptly, for the tests that wait for an expiry.
   * @default 120 (a store with whole-second TTLs declares more)
   */
  readonly shortTtlMs?: number;
}

let counter = 0;
/** A namespace no other test uses: a valid identifier for tables and a safe key prefix. */
export function freshNamespace(): string {
  counter++;
  return `lh_${process.pid}_${Date.now().toString(36)}_${counter}`;
}
