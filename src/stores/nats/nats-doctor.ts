import {
  finding,
  findingIds,
  FindingLevel,
  type Diagnosis,
  type Finding,
} from '../../core/doctor.js';
import type { NatsConnectionLike, NatsKv } from './nats-driver.js';

findingIds(
  'nats.memory-storage',
  'nats.max-age',
  'nats.single-replica',
  'nats.sync-interval',
  'nats.clustered-cas',
);

/**
 * Reads what decides whether an acknowledged conditional write survives a restart, a crash or a
 * power loss: the bucket's stream info (storage, replicas, max age; one JetStream API request)
 * and the version the server gave when the connection was made. Read-only. JetStream does not
 * tell clients how often it fsyncs: on a server before 2.10, which cannot be told to fsync every
 * write, that is an `unsafe` finding; on a later one, `unknown`, saying what to check.
 */
export async function diagnoseNats(
  kv: NatsKv,
  nc: NatsConnectionLike,
  bucket: string,
): Promise<Diagnosis> {
  const status = await kv.status();
  const stream = kv.stream ?? `KV_${bucket}`;
  const version = nc.info?.version;
  const findings: Finding[] = [];
  if (status.storage === 'memory') {
    findings.push(
      finding(
        'nats.memory-storage',
        FindingLevel.UNSAFE,
        `stream ${stream}: storage memory`,
        'a restart of the server (of every server holding the stream, with replicas) forgets every lease record: each resource can be granted again at once, while its holder still works, and tokens start again at 1, below tokens a downstream fence has seen',
        `a bucket with file storage: the storage of a stream cannot be changed, so delete ${stream} and let the store create the bucket again (file storage), or create it with storage file`,
      ),
    );
  }
  if (status.ttl > 0) {
    findings.push(
      finding(
        'nats.max-age',
        FindingLevel.UNSAFE,
        `stream ${stream}: max_age ${status.ttl} ms`,
        'the server deletes a record not written for that long (a released lease, or one nobody renews): its next grant starts the token again at 1, below tokens a downstream fence has seen',
        `max_age 0 on the stream ${stream} (a stream update), as the store creates buckets`,
      ),
    );
  }
  if (status.replicas === 1) {
    findings.push(
      finding(
        'nats.single-replica',
        FindingLevel.WARNING,
        `stream ${stream}: num_replicas 1`,
        "one server's disk holds the only copy of the records: while that server is down no lease can be granted, renewed or released (holders lose theirs at their deadline), and losing that disk loses every token",
        `num_replicas 3 on a JetStream cluster of three servers or more (update the stream ${stream} to 3 replicas)`,
      ),
    );
  }
  const cas = clusteredConditionalWrites(status.replicas ?? 1, version, stream);
  if (cas) findings.push(cas);
  findings.push(syncInterval(version));
  return {
    findings,
    checked: [
      `stream info of ${stream}: storage, num_replicas, max_age`,
      `the server's version, from its INFO when the connection was made: ${version ?? 'not given'}`,
    ],
  };
}

/** `[major, minor, patch]` of a version string; `undefined` when it is not one. */
function versionOf(version: string | undefined): [number, number, number] | undefined {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version ?? '');
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : undefined;
}

/**
 * nats-server before 2.9.21 checks a clustered stream's "expected last subject sequence" before
 * the write goes through Raft, not as part of it: two conditional writes on one key sent close
 * together can both be accepted (nats-io/nats-server#4320). For leases that is two grants of one
 * token, or a renewal undone by a write the holder made at the same moment; leasehold's own lab
 * runs on 2.9.10 with an R3 bucket saw both. A single-replica stream checks as it stores.
 */
function clusteredConditionalWrites(
  replicas: number,
  version: string | undefined,
  stream: string,
): Finding | undefined {
  const parts = versionOf(version);
  if (replicas <= 1 || !parts) return undefined;
  const [major, minor, patch] = parts;
  const before = major < 2 || (major === 2 && (minor < 9 || (minor === 9 && patch < 21)));
  if (!before) return undefined;
  return finding(
    'nats.clustered-cas',
    FindingLevel.UNSAFE,
    `nats-server ${version} with stream ${stream} at num_replicas ${replicas}`,
    'on a clustered stream this server can accept two conditional writes made on the same revision (nats-io/nats-server#4320, fixed in 2.9.21): two contenders can both be granted a lease, with one token, and a renewal can be undone by another write of its holder',
    'nats-server 2.9.21 or later on every server of the cluster (or num_replicas 1 until then)',
  );
}

/**
 * How often the server fsyncs, as far as a client can tell: nats-server before 2.10 has no
 * `sync_interval` setting and fsyncs its JetStream files once a minute; later ones fsync every
 * `sync_interval` (2 minutes by default, or every write with `always`), which only the server's
 * configuration and its monitoring endpoint show.
 */
function syncInterval(version: string | undefined): Finding {
  const [major, minor] =
    /^(\d+)\.(\d+)\./
      .exec(version ?? '')
      ?.slice(1)
      .map(Number) ?? [];
  const fixed =
    major !== undefined && minor !== undefined && (major < 2 || (major === 2 && minor < 10));
  if (fixed) {
    return finding(
      'nats.sync-interval',
      FindingLevel.UNSAFE,
      `nats-server ${version}: no sync_interval setting (before 2.10, JetStream fsyncs its files once a minute)`,
      'an OS crash or power loss can lose the grants acknowledged in the last minute (with replicas, when the servers holding them lose power together): they can be granted again, with tokens already handed out',
      'nats-server 2.10 or later with sync_interval: always in the jetstream block of every server (each write then waits for its fsync)',
    );
  }
  return finding(
    'nats.sync-interval',
    FindingLevel.UNKNOWN,
    `nats-server ${version ?? '(version not given)'}: its sync_interval is not reported to clients`,
    'unless every server has sync_interval: always, JetStream fsyncs only every sync_interval (2 minutes by default), so an OS crash or power loss can lose acknowledged grants (shown by Jepsen on NATS 2.12.1, December 2025): they can be granted again, with tokens already handed out',
    "sync_interval: always in the jetstream block of every server's configuration; the monitoring endpoint shows it (/varz: jetstream.config.sync_always)",
  );
}
