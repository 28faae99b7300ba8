import type * as Cockatiel from 'cockatiel';
import { loadDriver } from '../../core/load-driver.js';
/**
 * The part of an `etcd3` client (`Etcd3`) this store uses, typed structurally so that `etcd3`
 * stays an optional peer dependency. Keys and values are bytes; revisions, versions and lease ids
 * are int64 decimal strings, exactly as etcd3 hands them over.
 */

/** gRPC call options: this store always sets an absolute deadline. */
export interface EtcdCallOptions {
  deadline?: Date | number;
}

export interface EtcdKeyValue {
  key: Buffer;
  value: Buffer;
  /** Writes since the key was created; reset only by deleting it. */
  version: string;
  create_revision: string;
  mod_revision: string;
  /** The etcd lease the key is attached to, `'0'` for none. */
  lease: string;
}

export interface EtcdCompare {
  key: Buffer;
  target: 'Version' | 'Create' | 'Mod' | 'Value' | 'Lease';
  result: 'Equal' | 'NotEqual' | 'Greater' | 'Less';
  version?: string | number;
  create_revision?: string | number;
  mod_revision?: string | number;
  value?: Buffer;
  lease?: string | number;
}

export interface EtcdRangeRequest {
  key: Buffer;
  range_end?: Buffer;
  limit?: number;
  /** The keys and their revisions without values. */
  keys_only?: boolean;
  /** Read as of this revision (a snapshot across pages); the newest when omitted. */
  revision?: string;
}

export interface EtcdRequestOp {
  request_range?: EtcdRangeRequest;
  request_put?: { key: Buffer; value: Buffer; lease?: string; prev_kv?: boolean };
  request_delete_range?: { key: Buffer };
  request_txn?: EtcdTxnRequest;
}

export interface EtcdTxnRequest {
  compare: EtcdCompare[];
  success: EtcdRequestOp[];
  failure: EtcdRequestOp[];
}

export interface EtcdRangeResponse {
  header?: { revision: string } | null;
  kvs: EtcdKeyValue[];
  more: boolean;
}

export interface EtcdResponseOp {
  response_range?: EtcdRangeResponse | null;
  response_put?: { prev_kv?: EtcdKeyValue | null } | null;
  response_txn?: EtcdTxnResponse | null;
}

export interface EtcdTxnResponse {
  succeeded: boolean;
  responses: EtcdResponseOp[];
}

export interface EtcdLeaseGrantResponse {
  ID: string;
  /** Whole seconds actually granted: the server raises a TTL below its minimum. */
  TTL: string;
  error?: string;
}

/** One `LeaseKeepAlive` stream; this store sends one request on it and reads one answer. */
export interface EtcdKeepAliveStream {
  write(request: { ID: string }): unknown;
  end(): unknown;
  on(event: 'data', listener: (response: { ID: string; TTL: string }) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

export interface EtcdEvent {
  type: 'Put' | 'Delete';
  kv: EtcdKeyValue;
}

export interface EtcdWatchResponse {
  events: EtcdEvent[];
}

export interface EtcdWatcher {
  on(event: 'data', listener: (response: EtcdWatchResponse) => void): unknown;
  on(event: 'connected', listener: () => void): unknown;
  on(event: 'disconnected' | 'error', listener: (error: Error) => void): unknown;
  cancel(): Promise<void>;
}

export interface EtcdWatchBuilder {
  inRange(range: { start: Buffer; end: Buffer }): EtcdWatchBuilder;
  /** Attaches the watcher at once; it reconnects and resumes by itself after a broken stream. */
  watcher(): EtcdWatcher;
}

/** One member of the cluster, as `MemberList` reports it. */
export interface EtcdMember {
  ID: string;
  /** Empty for a member that was added but has not started yet. */
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  /** A raft learner: it receives the log but does not vote, so it counts in no quorum. */
  isLearner?: boolean;
}

/** The part of an `Etcd3` client this store uses. */
export interface EtcdClient {
  /** The KV service: range reads and transactions. */
  readonly kv: {
    /** Reads a key or a range of keys. */
    range(request: EtcdRangeRequest, options?: EtcdCallOptions): Promise<EtcdRangeResponse>;
    /** Runs one transaction: compares, then the puts or the other branch. */
    txn(request: EtcdTxnRequest, options?: EtcdCallOptions): Promise<EtcdTxnResponse>;
  };
  /** The lease service: grants etcd leases and keeps them alive. */
  readonly leaseClient: {
    /** Grants an etcd lease of `TTL` seconds. */
    leaseGrant(
      request: { TTL: number },
      options?: EtcdCallOptions,
    ): Promise<EtcdLeaseGrantResponse>;
    /** Opens the stream that keeps etcd leases alive. */
    leaseKeepAlive(options?: EtcdCallOptions): Promise<EtcdKeepAliveStream>;
  };
  /**
   * The cluster service, read by `diagnose` alone (`MemberList`). Optional so that a client made
   * of parts still types; `diagnose` then reports the membership as unread.
   */
  readonly cluster?: {
    /** Lists the cluster's members. */
    memberList(
      request: object,
      options?: EtcdCallOptions,
    ): Promise<{
      /** Every member, voting or not. */
      members: EtcdMember[];
    }>;
  };
  /** Starts building a watch (the stream that serves `watch`). */
  watch(): EtcdWatchBuilder;
  /** Closes the client; the store calls it on `close()` only for a client it created. */
  close(): void;
}

/** A cockatiel policy as etcd3 runs each call through it. */
export type Policy = Cockatiel.IPolicy<Cockatiel.IDefaultPolicyContext, never>;

/** The part of the `etcd3` module this store uses. */
export interface Etcd3Module {
  Etcd3: new (options: {
    hosts: string[];
    auth?: { username: string; password: string };
    grpcOptions?: Readonly<Record<string, number>>;
    /** Call options for each attempt of a call, given the request it sends as `params`. */
    defaultCallOptions?: (context: { params?: unknown }) => EtcdCallOptions;
    faultHandling?: {
      host?: (host: string) => Policy;
      global?: Policy;
      /** etcd3 takes each watch's first delay from `next()`, so this is a backoff factory. */
      watchBackoff?: Cockatiel.IBackoffFactory<unknown>;
    };
  }) => EtcdClient;
  isRecoverableError(error: Error): boolean;
}

/** Loads `etcd3` and `cockatiel` (its fault-handling policies), or fails with `DRIVER_MISSING`. */
export function loadEtcd3(): Promise<[Etcd3Module, typeof Cockatiel]> {
  return Promise.all([
    loadDriver<Etcd3Module>('etcd3', 'etcd'),
    loadDriver<typeof Cockatiel>('cockatiel', 'etcd'),
  ]);
}
