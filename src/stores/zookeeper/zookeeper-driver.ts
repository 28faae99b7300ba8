import { loadDriver } from '../../core/load-driver.js';
/**
 * The part of `node-zookeeper-client` this store uses, typed structurally so that the package
 * stays an optional peer dependency. ZooKeeper's 64-bit fields (`mtime`, `ephemeralOwner`, zxids)
 * arrive as 8-byte big-endian buffers, exactly as the driver hands them over.
 */

/** A znode's metadata. */
export interface ZkStat {
  /** Leader wall-clock time, ms since the epoch, of the transaction that last wrote the data. */
  readonly mtime: Buffer;
  /** Writes of the data since the znode was created (int32: it wraps after 2^31 − 1). */
  readonly version: number;
  /** The session that owns an ephemeral znode; all zeros for a persistent one. */
  readonly ephemeralOwner: Buffer;
  /** How many children the znode has. */
  readonly numChildren: number;
  /** How many bytes of data the znode holds. */
  readonly dataLength?: number;
}

/** What the driver passes to a callback on failure: a ZooKeeper error code and its name. */
export interface ZkException extends Error {
  getCode(): number;
}

/** One operation's answer in a `multi`: `err` set (and non-zero) on the one that failed. */
export interface ZkOpResult {
  readonly type: number;
  readonly err?: number;
  readonly stat?: ZkStat;
}

/** A `multi` being built: every operation is applied, or none. */
export interface ZkTransaction {
  create(path: string, data: Buffer, mode: number): ZkTransaction;
  /** Version `-1` (and, in this driver, `0`) matches any version: only existence is checked. */
  check(path: string, version?: number): ZkTransaction;
  setData(path: string, data: Buffer, version?: number): ZkTransaction;
  remove(path: string, version?: number): ZkTransaction;
  commit(callback: (error: ZkException | null, results?: ZkOpResult[]) => void): void;
}

/** A watch notification (a one-shot watch fires once). */
export interface ZkEvent {
  getType(): number;
  getPath(): string;
}

export type ZkWatcher = (event: ZkEvent) => void;

/** One ZooKeeper session over one connection, which the driver moves between servers by itself. */
export interface ZkClient {
  connect(): void;
  /** Ends the session: the server deletes its ephemeral znodes at once. */
  close(): void;
  on(event: 'connected' | 'disconnected' | 'expired', listener: () => void): unknown;
  removeListener(event: string, listener: () => void): unknown;
  getSessionId(): Buffer;
  /** The session timeout the server granted, once connected. */
  getSessionTimeout(): number;
  getData(
    path: string,
    watcher: ZkWatcher | undefined,
    callback: (error: ZkException | null, data?: Buffer, stat?: ZkStat) => void,
  ): void;
  exists(
    path: string,
    watcher: ZkWatcher | undefined,
    callback: (error: ZkException | null, stat?: ZkStat | null) => void,
  ): void;
  getChildren(
    path: string,
    watcher: ZkWatcher | undefined,
    callback: (error: ZkException | null, children?: string[]) => void,
  ): void;
  setData(
    path: string,
    data: Buffer,
    version: number,
    callback: (error: ZkException | null, stat?: ZkStat) => void,
  ): void;
  mkdirp(path: string, callback: (error: ZkException | null) => void): void;
  transaction(): ZkTransaction;
  /**
   * The driver's connection internals, read only to drop a connection that stopped answering (the
   * driver never notices one: it has no read timeout) and to leave a session without ending it.
   * Optional: without them the store falls back to `close()` and to waiting.
   */
  readonly connectionManager?: {
    state?: number;
    socket?: { destroy(): void };
  };
}

/** The part of the `node-zookeeper-client` module this store uses. */
export interface ZkModule {
  createClient(
    connectionString: string,
    options: { sessionTimeout: number; spinDelay: number; retries: number },
  ): ZkClient;
  readonly CreateMode: { readonly PERSISTENT: number; readonly EPHEMERAL: number };
}

/** ZooKeeper error codes this store tells apart. */
export const ZK_CODE = Object.freeze({
  OK: 0,
  CONNECTION_LOSS: -4,
  OPERATION_TIMEOUT: -7,
  NO_NODE: -101,
  NO_AUTH: -102,
  BAD_VERSION: -103,
  NODE_EXISTS: -110,
  NOT_EMPTY: -111,
  SESSION_EXPIRED: -112,
  INVALID_ACL: -114,
  AUTH_FAILED: -115,
});

/** Watch event types. */
export const ZK_EVENT = Object.freeze({
  NODE_CREATED: 1,
  NODE_DELETED: 2,
  NODE_DATA_CHANGED: 3,
  NODE_CHILDREN_CHANGED: 4,
});

/** The driver's connection state while it closes: a closed socket is then not reopened. */
export const ZK_CLOSING_STATE = -1;

/** Loads `node-zookeeper-client`, or fails with `DRIVER_MISSING` naming it. */
export function loadZookeeperClient(): Promise<ZkModule> {
  return loadDriver<ZkModule>('node-zookeeper-client', 'zookeeper');
}
