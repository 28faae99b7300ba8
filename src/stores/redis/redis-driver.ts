import { loadDriver } from '../../core/load-driver.js';
import type { RedisNode } from './redis-url.js';
import { withDeadline as deadline } from '../../core/deadline.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import { isNoScript } from './redis-errors.js';
import type { Script } from './redis-ops.js';

export type RedisArg = string | number;

/**
 * The read-only server commands `diagnose` sends to one Redis server, as ioredis spells them.
 * Optional, so that a client made by hand still fits: without `config` its settings are reported
 * as unreadable; without `info`, `diagnose` fails with `NOT_SUPPORTED`.
 */
export interface RedisAdmin {
  /** `INFO <section>`: one section of the server's report, as `field:value` lines. */
  info?(section: string): Promise<string>;
  /**
   * `CONFIG GET <parameter>`: `[name, value]` (a map on RESP3). Managed Redis services often
   * disable or rename CONFIG: the call is then refused with a reply error.
   */
  config?(subcommand: 'GET', parameter: string): Promise<unknown>;
  /** The connection's options; `host` and `port` name a cluster node in findings. */
  readonly options?: object;
}

/**
 * The part of an ioredis `Redis` or `Cluster` this store uses; a node-redis client is adapted
 * onto it (see redis-node.ts).
 */
export interface RedisClient extends RedisAdmin {
  /** Runs a cached Lua script by its SHA-1 (`EVALSHA`). */
  evalsha(sha: string, numKeys: number, ...args: RedisArg[]): Promise<unknown>;
  /** Runs a Lua script by its text (`EVAL`), when the server does not know the SHA yet. */
  eval(script: string, numKeys: number, ...args: RedisArg[]): Promise<unknown>;
  /** Reads fields of a hash (`HMGET`). */
  hmget(key: string, ...fields: string[]): Promise<(string | null)[]>;
  /** A new connection with the same options: it serves `watch` (a subscribed connection does nothing else). */
  duplicate(): RedisSubscriber;
  /** Closes the connection gracefully; the store calls it on `close()` only for a client it created. */
  quit(): Promise<unknown>;
  /** Drops the connection at once (when `quit` gets no answer). */
  disconnect(): void;
  /** `true` on an ioredis `Cluster`. */
  readonly isCluster?: boolean;
  /** An ioredis `Cluster`'s connections to its nodes of one role: `diagnose` reads every master. */
  nodes?(role: 'master'): RedisAdmin[];
  /** An ioredis `Redis`'s options: its `commandTimeout` bounds every command it sends. */
  readonly options?: object;
}

/** The part of a duplicated ioredis connection that `watch` uses. */
export interface RedisSubscriber {
  /** Subscribes to the store's release channel. */
  subscribe(channel: string): Promise<unknown>;
  /** Receives each published message: the channel and the released resource. */
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  /** Receives connection errors. */
  on(event: 'error', listener: (error: Error) => void): unknown;
  /** Closes the subscriber connection. */
  disconnect(): void;
}

/**
 * Most leases one `renewMany` / `releaseMany` script call handles. Building a call's arguments and
 * decoding its reply run on the event loop in one piece, about 5 ms per 1,000 leases on a loaded
 * 2-core machine (a call of 10,000 held it 69 ms): larger batches go as several calls, built one
 * per turn of the loop, so a lease's deadline timer is never held up for long (design rule 6), and
 * each script's run on the server stays short. The calls are still sent without waiting for each
 * other's answers.
 */
export const MAX_SCRIPT_LEASES = 1000;

/**
 * Most resources one `acquireMany` script call takes. An acquire writes a record and the index
 * entry of each resource; 1,000 keep one call to a few milliseconds of server time (about 5 ms
 * measured on a busy 2-core machine, 2 ms when every resource is held), so a big batch never
 * blocks Redis for long, and a batch of 1,000 on one shard is still one call.
 */
export const MAX_ACQUIRE_KEYS = 1000;

/**
 * EVALSHA, and EVAL (which also caches the script on that node) when the server does not know it
 * yet; `reply` turns the answer into the result in the same step (no promise more than needed).
 */
export function runScript<T = unknown>(
  client: RedisClient,
  script: Script,
  keys: string[],
  args: RedisArg[],
  reply: (value: unknown) => T = itself as (value: unknown) => T,
): Promise<T> {
  return client.evalsha(script.sha, keys.length, ...keys, ...args).then(reply, (error: unknown) => {
    if (!isNoScript(error)) throw error;
    return client.eval(script.lua, keys.length, ...keys, ...args).then(reply);
  });
}

/**
 * `runScript` with callbacks instead of a promise; neither callback may throw. Exactly one of them
 * is called, also when the driver throws rather than rejects.
 */
export function sendScript(
  client: RedisClient,
  script: Script,
  keys: string[],
  args: RedisArg[],
  onReply: (value: unknown) => void,
  onError: (error: unknown) => void,
): void {
  // A driver that throws instead of rejecting (a closed client, say) still answers through onError.
  const send = (run: () => Promise<unknown>, onFailure: (error: unknown) => void): void => {
    let sent: Promise<unknown>;
    try {
      sent = run();
    } catch (error) {
      onError(error);
      return;
    }
    sent.then(onReply, onFailure);
  };
  send(
    () => client.evalsha(script.sha, keys.length, ...keys, ...args),
    (error: unknown) => {
      if (!isNoScript(error)) return onError(error);
      send(() => client.eval(script.lua, keys.length, ...keys, ...args), onError);
    },
  );
}

const itself = (value: unknown): unknown => value;

/**
 * Whether the driver itself fails every command after at most `ms`: an ioredis `Redis` with a
 * `commandTimeout` starts that timer as a command is issued, queued or not. A `Cluster` queues
 * commands while it waits for its slots before any node's timer starts, so it never qualifies.
 */
export function driverBounds(client: RedisClient, ms: number): boolean {
  if (client.isCluster === true) return false;
  const timeout = (client.options as { commandTimeout?: unknown } | undefined)?.commandTimeout;
  return typeof timeout === 'number' && timeout > 0 && timeout <= ms;
}

/**
 * `promise`, or `STORE_UNAVAILABLE` after `ms`, whichever comes first. The driver has its own
 * timeouts; this one also bounds queues it does not (a Cluster waiting for its slots, a client the
 * caller configured without a command timeout). A write that timed out may still land later.
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, operation: string): Promise<T> {
  return deadline(promise, ms, () => noAnswer(operation, ms));
}

/** The error of a call that got no answer within `ms`. */
export function noAnswer(operation: string, ms: number): LeaseError {
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `Redis ${operation} failed: no answer within ${ms} ms (the server may be paused, overloaded or unreachable; the call may still take effect)`,
  );
}

/** A client this store made: it connects explicitly and reports errors as events. */
export interface OwnedClient extends RedisClient {
  connect(): Promise<unknown>;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/** The part of the `ioredis` module this store uses. */
export interface IoredisModule {
  Redis: new (options: object) => OwnedClient;
  Cluster: new (nodes: RedisNode[], options: object) => OwnedClient;
}

/** Script keys and arguments as node-redis takes them: strings, keys apart. */
export interface ScriptOptions {
  keys: string[];
  arguments: string[];
}

/**
 * The part of a node-redis v5 client (`createClient()` or `createCluster()` from the `redis`
 * package, connected) this store uses, typed structurally so that `redis` stays an optional peer
 * dependency. Scripts go by their first key on a cluster, so each still reaches its one slot.
 */
export interface NodeRedisClient {
  evalSha(sha: string, options: ScriptOptions): Promise<unknown>;
  eval(script: string, options: ScriptOptions): Promise<unknown>;
  hmGet(key: string, fields: string[]): Promise<unknown>;
  /** A new client with the same options, not yet connected: it serves `watch`. */
  duplicate(): NodeRedisSubscriber;
  close(): Promise<unknown>;
  destroy(): void;
  readonly isOpen: boolean;
  /** A cluster's masters; a single client has none. */
  readonly masters?: unknown;
  /** `INFO <section>`, for `diagnose`. */
  info?(section: string): Promise<unknown>;
  /** `CONFIG GET <parameter>`, for `diagnose`: `{ name: value }`. */
  configGet?(parameter: string): Promise<unknown>;
  /** A cluster's connected client of one of its `masters`, for `diagnose`. */
  nodeClient?(node: NodeRedisNode): Promise<NodeRedisServer>;
}

/** One of a node-redis cluster's `masters`. */
export interface NodeRedisNode {
  readonly host: string;
  readonly port: number;
}

/** The commands `diagnose` sends to one node of a node-redis cluster. */
export type NodeRedisServer = Pick<NodeRedisClient, 'info' | 'configGet'>;

/** The part of a duplicated node-redis client that `watch` uses. */
export interface NodeRedisSubscriber {
  connect(): Promise<unknown>;
  subscribe(
    channel: string,
    listener: (message: string, channel: string) => void,
  ): Promise<unknown>;
  on(event: 'error', listener: (error: Error) => void): unknown;
  destroy(): void;
}

/** Loads `ioredis`, or fails with `DRIVER_MISSING` naming it. */
export function loadIoredis(): Promise<IoredisModule> {
  return loadDriver<IoredisModule>('ioredis', 'redis');
}
