import {
  finding,
  findingIds,
  FindingLevel,
  type Diagnosis,
  type Finding,
} from '../../core/doctor.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { RedisAdmin, RedisClient } from './redis-driver.js';
import { isReplyRefusal } from './redis-errors.js';

findingIds(
  'redis.no-persistence',
  'redis.no-aof',
  'redis.aof-fsync',
  'redis.eviction',
  'redis.async-replication',
  'redis.writable-replica',
  'redis.replica',
  'redis.settings-unreadable',
);

/** The INFO sections read on each server. */
const SECTIONS = ['persistence', 'replication', 'memory'] as const;

/** The settings read with CONFIG GET, one call each (Redis before 7 takes one per call). */
const PARAMETERS = [
  'save',
  'appendfsync',
  'no-appendfsync-on-rewrite',
  'replica-read-only',
  'min-replicas-to-write',
] as const;

/** What the appendonly fix says, wherever acknowledged grants can be lost on a restart. */
const AOF_FIX =
  'appendonly yes with appendfsync always (CONFIG SET appendonly yes, CONFIG SET appendfsync always, then CONFIG REWRITE or the same in redis.conf)';

/** What one server reported: its INFO fields and CONFIG values, or the refusal of either. */
interface ServerReport {
  /** `host:port` of a cluster master; empty on a single server. */
  readonly name: string;
  readonly info: ReadonlyMap<string, string> | Refused;
  readonly config: ReadonlyMap<string, string> | Refused;
}

/** A command the server (or the user's ACL) refused, with its reply. */
interface Refused {
  readonly refused: string;
}

/**
 * Reads, on a single server or on every master of a Redis Cluster, what decides whether an
 * acknowledged script call survives a restart, a crash, a power loss or a failover: `INFO
 * persistence`, `INFO replication`, `INFO memory` and `CONFIG GET` of `save`, `appendfsync`,
 * `no-appendfsync-on-rewrite`, `replica-read-only` and `min-replicas-to-write`. Read-only. A
 * server that refuses CONFIG (managed Redis often does) gives a `redis.settings-unreadable`
 * finding saying what to check by hand; a connection failure is thrown.
 */
export async function diagnoseRedis(client: RedisClient): Promise<Diagnosis> {
  const cluster = client.isCluster === true;
  const servers = cluster ? mastersOf(client) : [client];
  const reports = await Promise.all(
    servers.map((server) => readServer(server, cluster ? nameOf(server) : '')),
  );
  const readInfo = reports.some((r) => !isRefused(r.info));
  const readConfig = reports.some((r) => !isRefused(r.config));
  const checked = [
    ...(cluster ? [`every cluster master: ${reports.map((r) => r.name).join(', ')}`] : []),
    ...(readInfo ? SECTIONS.map((section) => `INFO ${section}`) : []),
    ...(readConfig ? [`CONFIG GET ${PARAMETERS.join(', ')}`] : []),
  ];
  return { findings: reports.flatMap(judge), checked };
}

/** The masters of an ioredis (or adapted node-redis) cluster, as it knows them now. */
function mastersOf(client: RedisClient): RedisAdmin[] {
  const masters = client.nodes?.('master') ?? [];
  if (masters.length === 0) {
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      'Redis diagnose failed: the cluster client knows no master yet (is the cluster reachable?)',
    );
  }
  return masters;
}

/** `host:port` of a cluster node, from its connection options. */
function nameOf(server: RedisAdmin): string {
  const { host, port } = (server.options ?? {}) as { host?: unknown; port?: unknown };
  return `${String(host ?? '?')}:${String(port ?? '?')}`;
}

async function readServer(server: RedisAdmin, name: string): Promise<ServerReport> {
  if (typeof server.info !== 'function') {
    throw new LeaseError(
      ErrorCode.NOT_SUPPORTED,
      'this Redis client has no info(): diagnose needs INFO and CONFIG GET (ioredis and node-redis clients have them)',
      { retryable: false },
    );
  }
  const info = refusable(async () => {
    const texts = await Promise.all(SECTIONS.map((section) => server.info!(section)));
    return parseInfo(texts.join('\n'));
  });
  const config =
    typeof server.config !== 'function'
      ? Promise.resolve({ refused: 'this client has no config()' })
      : refusable(async () => {
          const replies = await Promise.all(PARAMETERS.map((p) => server.config!('GET', p)));
          const values = new Map<string, string>();
          for (const reply of replies) for (const [k, v] of configPairs(reply)) values.set(k, v);
          return values;
        });
  // Both awaited together: when one fails, the other's failure is not left unhandled.
  const [infoReport, configReport] = await Promise.all([info, config]);
  return { name, info: infoReport, config: configReport };
}

/** `read()`, or the refusal when the server answered with a reply error (not a lost connection). */
async function refusable(
  read: () => Promise<ReadonlyMap<string, string>>,
): Promise<ReadonlyMap<string, string> | Refused> {
  try {
    return await read();
  } catch (error) {
    if (isReplyRefusal(error))
      return { refused: error instanceof Error ? error.message : String(error) };
    throw error;
  }
}

function isRefused(value: ReadonlyMap<string, string> | Refused): value is Refused {
  return !(value instanceof Map);
}

/** `field:value` lines of INFO; section headers and blank lines skipped. */
function parseInfo(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return fields;
}

/** A CONFIG GET reply as name, value pairs: a flat array (RESP2), a Map or an object (RESP3). */
function configPairs(reply: unknown): [string, string][] {
  if (Array.isArray(reply)) {
    const pairs: [string, string][] = [];
    for (let i = 0; i + 1 < reply.length; i += 2)
      pairs.push([String(reply[i]), String(reply[i + 1])]);
    return pairs;
  }
  if (reply instanceof Map) return [...reply].map(([k, v]) => [String(k), String(v)]);
  if (typeof reply === 'object' && reply !== null)
    return Object.entries(reply).map(([k, v]) => [k, String(v)]);
  return [];
}

/** The findings of one server's report. */
function judge(report: ServerReport): Finding[] {
  const at = report.name === '' ? '' : `${report.name}: `;
  const findings: Finding[] = [];
  const { info, config } = report;
  if (isRefused(info) || isRefused(config)) findings.push(unreadable(at, info, config));
  if (isRefused(info)) return findings;
  const get = (name: string): string | undefined =>
    isRefused(config) ? undefined : config.get(name);
  findings.push(
    ...persistence(at, info, get),
    ...eviction(at, info),
    ...replication(at, info, get),
  );
  return findings;
}

function unreadable(
  at: string,
  info: ReadonlyMap<string, string> | Refused,
  config: ReadonlyMap<string, string> | Refused,
): Finding {
  const refusals = [
    ...(isRefused(info) ? [`INFO refused (${info.refused})`] : []),
    ...(isRefused(config) ? [`CONFIG GET refused (${config.refused})`] : []),
  ];
  return finding(
    'redis.settings-unreadable',
    FindingLevel.UNKNOWN,
    `${at}${refusals.join('; ')}`,
    `what a restart, crash or power loss loses depends on settings this user cannot read here (${PARAMETERS.join(', ')}${isRefused(info) ? ', and whether AOF, eviction or replicas are on' : ''})`,
    "check them by hand (redis.conf, or the provider's console on a managed Redis): appendonly yes, appendfsync always, no-appendfsync-on-rewrite no, no allkeys-* eviction policy, no replicas that a failover can promote",
  );
}

/** No AOF (with or without RDB snapshots), or an AOF not fsynced before each reply. */
function persistence(
  at: string,
  info: ReadonlyMap<string, string>,
  get: (name: string) => string | undefined,
): Finding[] {
  const save = get('save');
  if (info.get('aof_enabled') !== '1') {
    if (save === '') {
      return [
        finding(
          'redis.no-persistence',
          FindingLevel.UNSAFE,
          `${at}appendonly no, save ""`,
          'a restart or crash forgets every lease record: each resource can be granted again at once, while its holder still works, and tokens start again at 1, below tokens a downstream fence has seen',
          AOF_FIX,
        ),
      ];
    }
    return [
      finding(
        'redis.no-aof',
        FindingLevel.UNSAFE,
        save === undefined
          ? `${at}appendonly no (INFO aof_enabled:0); the RDB save schedule could not be read`
          : `${at}appendonly no, save ${JSON.stringify(save)} (RDB snapshots only)`,
        'a restart or crash loses every grant acknowledged since the last RDB snapshot (all of them when no snapshot is taken): those resources can be granted again while their holders still work, with tokens already handed out',
        AOF_FIX,
      ),
    ];
  }
  const fsync = get('appendfsync');
  if (fsync === 'everysec' || fsync === 'no') {
    return [
      finding(
        'redis.aof-fsync',
        FindingLevel.UNSAFE,
        `${at}appendonly yes, appendfsync ${fsync}`,
        fsync === 'everysec'
          ? 'a machine crash or power loss loses the grants acknowledged in about the last second (the AOF is fsynced once a second): they can be granted again, with their tokens'
          : 'a machine crash or power loss loses the grants the OS had not yet written to disk (Redis never fsyncs the AOF; Linux flushes about every 30 s): they can be granted again, with their tokens',
        'appendfsync always (the reply then waits for the fsync)',
      ),
    ];
  }
  if (fsync === 'always' && get('no-appendfsync-on-rewrite') === 'yes') {
    return [
      finding(
        'redis.aof-fsync',
        FindingLevel.UNSAFE,
        `${at}appendonly yes, appendfsync always, no-appendfsync-on-rewrite yes`,
        'while a BGSAVE or AOF rewrite runs, the AOF is not fsynced: a machine crash or power loss then loses the grants acknowledged meanwhile (up to about 30 s on Linux), and they can be granted again, with their tokens',
        'no-appendfsync-on-rewrite no',
      ),
    ];
  }
  return [];
}

/** A memory limit whose policy may evict keys without a TTL: lease records never have one. */
function eviction(at: string, info: ReadonlyMap<string, string>): Finding[] {
  const maxmemory = Number(info.get('maxmemory') ?? 0);
  const policy = info.get('maxmemory_policy') ?? '';
  if (!(maxmemory > 0) || !policy.startsWith('allkeys-')) return [];
  const human = info.get('maxmemory_human');
  return [
    finding(
      'redis.eviction',
      FindingLevel.UNSAFE,
      `${at}maxmemory ${maxmemory}${human ? ` (${human})` : ''}, maxmemory-policy ${policy}`,
      'when memory fills, Redis evicts keys that have no TTL too: an evicted lease record is a resource granted again while its holder still works, with its token back at 1',
      'maxmemory-policy noeviction, or a volatile-* policy (lease records never have a TTL, so they are never evicted; writes are refused with OOM when memory is full instead), or maxmemory 0',
    ),
  ];
}

/** This server a replica, or a primary whose replicas a failover could promote. */
function replication(
  at: string,
  info: ReadonlyMap<string, string>,
  get: (name: string) => string | undefined,
): Finding[] {
  const role = info.get('role');
  if (role === 'slave') {
    const primary = `${info.get('master_host') ?? '?'}:${info.get('master_port') ?? '?'}`;
    if (get('replica-read-only') === 'no') {
      return [
        finding(
          'redis.writable-replica',
          FindingLevel.UNSAFE,
          `${at}role:slave (of ${primary}), replica-read-only no`,
          'grants written here are not on the primary, where other stores see the records, and are lost at the next resync: two holders at once, tokens handed out twice',
          'point the store at the primary, and set replica-read-only yes',
        ),
      ];
    }
    return [
      finding(
        'redis.replica',
        FindingLevel.WARNING,
        `${at}role:slave (of ${primary})`,
        'every grant, renewal and release is refused here (READONLY): no lease can be held through this server',
        `point the store at the primary (${primary})`,
      ),
    ];
  }
  const replicas = Number(info.get('connected_slaves') ?? 0);
  if (role !== 'master' || !(replicas > 0)) return [];
  const minReplicas = get('min-replicas-to-write');
  return [
    finding(
      'redis.async-replication',
      FindingLevel.UNSAFE,
      `${at}role:master, connected_slaves:${replicas}${minReplicas === undefined ? '' : `, min-replicas-to-write ${minReplicas}`}`,
      'Redis replicates asynchronously: a grant acknowledged here may not have reached a replica when this server fails, and a replica promoted then (by Sentinel, the cluster or an operator) grants the resource to a second holder, with a token already handed out. min-replicas-to-write only refuses writes while fewer replicas have answered within min-replicas-max-lag seconds: it narrows that window, it does not close it',
      'do not let a failover promote a replica of the lease store (replicas for backups only; promote by hand after the longest lease TTL, accepting that tokens may repeat), or keep leases in a store that replicates synchronously (etcd, ZooKeeper, PostgreSQL with a synchronous standby)',
    ),
  ];
}
