import type { LeaseStore, WatchEvent } from '../../src/index.js';

/** How a conformance test wants a store opened, beyond its namespace. */
export interface OpenOptions {
  /**
   * Every call, and the connect, gives up after about this long (the store's own deadline
   * options): the fault tests use a short one so a silent server fails a call quickly. Stores
   * that never wait on a server ignore it. @default the store's own defaults
   */
  readonly deadlineMs?: number;
}

/** How the conformance suite gets a store of one kind. Every adapter adds one to `stores.ts`. */
export interface StoreFactory {
  readonly name: string;
  /** Why this store cannot run here (a missing server binary), or `null` when it can. */
  unavailable(): string | null;
  /** Starts what the store needs (a real server on a free loopback port). Once per test file. */
  setup(): Promise<void>;
  /** A store over `namespace` (a table, a key prefix): the same namespace reaches the same records. */
  open(namespace: string, options?: OpenOptions): Promise<LeaseStore>;
  teardown(): Promise<void>;
  /** Records survive closing the store and opening it again. */
  readonly durable: boolean;
  /**
   * The shortest TTL the store can expire promptly, for the tests that wait for an expiry.
   * @default 120 (a store with whole-second TTLs declares more)
   */
  readonly shortTtlMs?: number;
  /**
   * The kinds of event the store's `watch` reports (every watching store reports `'released'`),
   * for the watch topic; absent when the store has no watch (`capabilities.watch` is false), so
   * the topic starts no server for it.
   */
  readonly watchEvents?: readonly WatchEvent['type'][];
  /**
   * SIGSTOP of the private server (its whole process tree): connections stay open, nothing
   * answers. With `resume`, for the fault topic; absent on setups without a server of their own.
   */
  pause?(): void;
  /** SIGCONT of what `pause` stopped. */
  resume?(): void;
  /**
   * SIGKILL of the private server, then a start on the same port and data: records and tokens
   * survive. Absent where the server keeps nothing across a restart (or there is no server).
   */
  restart?(): Promise<void>;
  /**
   * A store URL of this kind that reaches nothing (port `port` on 127.0.0.1, where nothing
   * listens), with the password `s3cret` where the URL can carry one and a deadline of at most
   * `deadlineMs`: the fault topic opens it and expects a clear error, not a hang.
   */
  unreachableUrl?(port: number, deadlineMs: number): string;
}

let counter = 0;
/** A namespace no other test uses: a valid identifier for tables and a safe key prefix. */
export function freshNamespace(): string {
  counter++;
  return `lh_${process.pid}_${Date.now().toString(36)}_${counter}`;
}
