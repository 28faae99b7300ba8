import { ErrorCode, isLeaseError, LeaseError } from '../../core/errors.js';
import { loadDriver } from '../../core/load-driver.js';

/**
 * The parts of the `@nats-io/*` packages (v3) this store uses, typed structurally so that they
 * stay optional peer dependencies. A `NatsConnection` from `@nats-io/transport-node` fits
 * `NatsConnectionLike`; the bucket handle from `@nats-io/kv` fits `NatsKv`.
 */

/**
 * What a NATS connection must offer: closing, being handed to `jetstream()`, and the plain
 * publish and subscribe the store sends its conditional writes with (see nats-publish.ts).
 */
export interface NatsConnectionLike {
  /** Closes the connection; the store calls it on `close()` only for a connection it opened. */
  close(): Promise<void>;
  /** Whether the connection was closed. */
  isClosed(): boolean;
  /** What the server said about itself when the connection was made (`diagnose` reads its version). */
  readonly info?: {
    /** The server's version, e.g. `2.10.22`. */
    readonly version?: string;
  };
  /** Settles once the connection is closed for good. */
  closed(): Promise<void | Error>;
  /** Sends one message; throws at once on a closed or draining connection. */
  publish(
    subject: string,
    data: Uint8Array,
    options?: { reply?: string; headers?: NatsHeaders },
  ): void;
  /** What happens to the connection (disconnects, server errors such as a refused publish). */
  status(): AsyncIterable<NatsStatusLike>;
  /** Calls `callback` with every message on `subject` (wildcards allowed) until unsubscribed. */
  subscribe(
    subject: string,
    options?: { callback?: (error: Error | null, msg: NatsMsgLike) => void },
  ): {
    /** Ends the subscription. */
    unsubscribe(): void;
  };
}

/** One event of `status()`; a server's `-ERR` is `type` `'error'` with the driver's error. */
export interface NatsStatusLike {
  readonly type: string;
  readonly error?: unknown;
}

/** A message as a subscription callback gets it. */
export interface NatsMsgLike {
  readonly subject: string;
  readonly data: Uint8Array;
  /** The status line of a message without payload: `code` 503 when no one listens on a subject. */
  readonly headers?: { readonly code: number };
}

/** `@nats-io/transport-node`'s message headers, as the store builds them. */
export interface NatsHeaders {
  set(name: string, value: string): void;
}

/** One stored value of a key, as `get` or a watch hands it over. */
export interface NatsKvEntry {
  /** The key as stored (the encoded resource). */
  readonly key: string;
  /** The bytes written (a leasehold record is JSON). */
  readonly value: Uint8Array;
  /** The stream sequence of this write: what a conditional write compares against. */
  readonly revision: number;
  /** `'PUT'`, or `'DEL'` / `'PURGE'` for a deletion marker. */
  readonly operation: string;
  /** On a watch entry: whether it came after the initial values. */
  readonly isUpdate?: boolean;
}

/** An iterator over entries that can be stopped (what `keys`, `history` and `watch` return). */
export interface NatsKvIterator<T> extends AsyncIterable<T> {
  stop(): void;
}

/** The part of a KV bucket handle (`@nats-io/kv` `KV`) this store uses. */
export interface NatsKv {
  /**
   * The subject a write of `key` is published on when `edit` (`$KV.<bucket>.<key>` for a plain
   * bucket): the store sends its conditional writes there itself (see nats-publish.ts).
   */
  subjectForKey(key: string, edit?: boolean): string;
  /** The key's last entry (a deletion marker included), `null` when it has none. */
  get(key: string): Promise<NatsKvEntry | null>;
  /** Every message the stream holds for keys matching `key` (a subject filter), then ends. */
  history(options: { key: string }): Promise<NatsKvIterator<NatsKvEntry>>;
  /** The last value of each key matching `key`, then every later write, until stopped. */
  watch(options: { key: string }): Promise<NatsKvIterator<NatsKvEntry>>;
  /** The bucket's configuration, checked once when the store opens it. */
  status(): Promise<NatsKvStatus>;
  /** The bucket's stream (`@nats-io/kv`'s `Bucket` has it): asked which keys exist. */
  readonly stream?: string;
  /** The JetStream manager the bucket was opened with (`@nats-io/kv`'s `Bucket` has it). */
  readonly jsm?: {
    /** The stream API. */
    readonly streams: {
      /** Stream info; with `subjects_filter`, `state.subjects` counts messages per subject. */
      info(
        stream: string,
        options: { subjects_filter: string },
      ): Promise<{
        /** The stream's state. */
        state?: {
          /** Messages per subject matching the filter. */
          subjects?: Record<string, number>;
        };
      }>;
    };
  };
}

/** What `status()` reports about the bucket's stream. */
export interface NatsKvStatus {
  /** Max age of values, in ms; 0 for none. */
  readonly ttl: number;
  /** `'file'` or `'memory'`. */
  readonly storage: string;
  /** How many servers keep a copy of the stream (`num_replicas`). */
  readonly replicas?: number;
  /** The bucket's stream info; `state.last_seq` is the revision of its newest write. */
  readonly streamInfo?: { readonly state?: { readonly last_seq?: number } };
}

/** `@nats-io/kv`'s `Kvm`: opens and creates buckets. */
export interface NatsKvm {
  create(name: string, options?: object): Promise<NatsKv>;
  open(name: string, options?: object): Promise<NatsKv>;
}

/** The three modules the store loads. */
export interface NatsModules {
  readonly transport: {
    connect(options: object): Promise<NatsConnectionLike>;
    /** An empty set of message headers. */
    headers(): NatsHeaders;
    /** A fresh, unique inbox subject (`_INBOX.<nuid>`, or under `prefix`). */
    createInbox(prefix?: string): string;
  };
  readonly jetstream: {
    jetstream(nc: NatsConnectionLike, options?: { timeout?: number }): object;
  };
  readonly kv: {
    Kvm: new (js: object) => NatsKvm;
  };
}

export const NATS_PACKAGES = Object.freeze({
  transport: '@nats-io/transport-node',
  jetstream: '@nats-io/jetstream',
  kv: '@nats-io/kv',
});

/**
 * Loads the driver packages by name. When any is missing, `DRIVER_MISSING` names the one and the
 * install command for all three (they are released together, same version).
 */
export async function loadNats(): Promise<NatsModules> {
  try {
    const [transport, jetstream, kv] = await Promise.all([
      loadDriver<NatsModules['transport']>(NATS_PACKAGES.transport, 'nats'),
      loadDriver<NatsModules['jetstream']>(NATS_PACKAGES.jetstream, 'nats'),
      loadDriver<NatsModules['kv']>(NATS_PACKAGES.kv, 'nats'),
    ]);
    return { transport, jetstream, kv };
  } catch (error) {
    if (!isLeaseError(error, ErrorCode.DRIVER_MISSING)) throw error;
    const all = Object.values(NATS_PACKAGES).join(' ');
    throw new LeaseError(
      ErrorCode.DRIVER_MISSING,
      `${error.message.replace(/: npm install .*$/, '')}: npm install ${all}`,
      {
        cause: error.cause,
        retryable: false,
      },
    );
  }
}
