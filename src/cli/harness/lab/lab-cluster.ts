import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { etcdUnavailable, PrivateEtcd } from '../servers/etcd-server.js';
import type { PrivateServer } from '../servers/private-server.js';
import { serverFolder } from '../servers/process-tree.js';
import { PrivateZookeeper, zookeeperUnavailable } from '../servers/zookeeper-server.js';
import { LabNats, natsUnavailable } from './lab-nats.js';
import {
  postgresUnavailable,
  redisUnavailable,
  startLabPostgres,
  startLabRedis,
  type PrimaryReplica,
} from './lab-replicated.js';
import { sentinelUnavailable, startLabSentinel, type SentinelSetup } from './lab-sentinel.js';
import type { LabHost, NetLab } from './netlab.js';

/** The replicated stores a lab runs, each member on a host of its own. */
export const LAB_CLUSTERS = [
  'etcd',
  'zookeeper',
  'nats',
  'redis',
  'redis-sentinel',
  'postgres-async',
  'postgres-sync',
] as const;
export type LabClusterKind = (typeof LAB_CLUSTERS)[number];

/** One member of a lab cluster: its server, on a host of its own. */
export interface LabMember {
  readonly name: string;
  readonly host: LabHost;
  readonly server: PrivateServer;
}

/** A replicated store whose members each run on their own lab host. */
export interface LabCluster {
  readonly kind: LabClusterKind;
  /** For messages and reports: `etcd, 3 members`. */
  readonly description: string;
  readonly members: readonly LabMember[];
  /** The store URL naming every member. */
  readonly url: string;
  /** The member that leads now, as the members themselves report; `undefined` while none does. */
  leader(): Promise<LabMember | undefined>;
  /**
   * For a primary and its replica: cuts the primary off from the replica, lets clients go on
   * with the primary alone for `ms` (what they are told then reaches no replica), promotes the
   * replica, moves the service address to it and kills the old primary for good (as Sentinel, a
   * cluster manager or an operator fails over). Returns what it did. Once only.
   */
  failover?(ms: number): Promise<string>;
  /** Stops every member and removes the cluster's folder. */
  stop(): Promise<void>;
}

/** Why a cluster of `kind` cannot run here, or `null`. */
export function labClusterUnavailable(kind: LabClusterKind): string | null {
  if (kind === 'etcd') return etcdUnavailable();
  if (kind === 'redis') return redisUnavailable();
  if (kind === 'redis-sentinel') return sentinelUnavailable();
  if (kind.startsWith('postgres')) return postgresUnavailable();
  return kind === 'nats' ? natsUnavailable() : zookeeperUnavailable();
}

/** Starts a cluster of `size` members of `kind`, each on a new host of `lab`, and waits until it serves. */
export async function startLabCluster(
  lab: NetLab,
  kind: LabClusterKind,
  size = 3,
): Promise<LabCluster> {
  const dir = serverFolder(`leasehold-lab-${kind}-`, kind === 'etcd');
  if (kind === 'redis-sentinel') {
    try {
      return sentinelCluster(dir, await startLabSentinel(lab, dir));
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }
  if (kind === 'redis' || kind.startsWith('postgres')) {
    try {
      return primaryReplica(
        lab,
        dir,
        kind,
        kind === 'redis'
          ? await startLabRedis(lab, dir)
          : await startLabPostgres(lab, dir, kind === 'postgres-sync'),
      );
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }
  const hosts = Array.from({ length: size }, (_, i) => lab.addHost(`${kind}-${i + 1}`));
  const cluster =
    kind === 'etcd'
      ? etcdCluster(lab, dir, hosts)
      : kind === 'nats'
        ? natsCluster(lab, dir, hosts)
        : zookeeperCluster(lab, dir, hosts);
  try {
    for (const member of cluster.members) member.server.spawnServer();
    await Promise.all(cluster.members.map((m) => m.server.untilReady(60_000)));
    return cluster;
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

async function stopAll(members: readonly LabMember[], dir: string): Promise<void> {
  await Promise.allSettled(members.map((m) => m.server.stop()));
  rmSync(dir, { recursive: true, force: true });
}

function etcdCluster(lab: NetLab, dir: string, hosts: readonly LabHost[]): LabCluster {
  const initialCluster = hosts.map((h, i) => `m${i + 1}=http://${h.ip}:2380`).join(',');
  const members = hosts.map((host, i) => {
    const server = new PrivateEtcd(join(dir, `m${i + 1}`), {
      name: `m${i + 1}`,
      host: host.ip,
      clientPort: 2379,
      peerPort: 2380,
      initialCluster,
      clusterToken: dir,
      heartbeatMs: 25,
      wrap: lab.wrap(host),
    });
    return { name: `etcd m${i + 1}`, host, server };
  });
  return {
    kind: 'etcd',
    description: `etcd, ${hosts.length} members`,
    members,
    url: `etcd://${hosts.map((h) => `${h.ip}:2379`).join(',')}`,
    async leader() {
      // Each member's status names the leader by id, and itself by the header's member id.
      for (const member of members) {
        if (!member.server.running) continue;
        try {
          const response = await fetch(`http://${member.host.ip}:2379/v3/maintenance/status`, {
            method: 'POST',
            body: '{}',
            signal: AbortSignal.timeout(500),
          });
          const status = (await response.json()) as {
            header?: { member_id?: string };
            leader?: string;
          };
          if (status.leader !== undefined && status.leader === status.header?.member_id)
            return member;
        } catch {
          // cut off or down: ask the next
        }
      }
      return undefined;
    },
    stop: () => stopAll(members, dir),
  };
}

function zookeeperCluster(lab: NetLab, dir: string, hosts: readonly LabHost[]): LabCluster {
  const servers = hosts.map((h, i) => `server.${i + 1}=${h.ip}:2888:3888`);
  const members = hosts.map((host, i) => {
    const server = new PrivateZookeeper(join(dir, `m${i + 1}`), {
      clientPort: 2181,
      host: host.ip,
      name: `zookeeper m${i + 1}`,
      ensemble: { id: i + 1, servers },
      // Durable, as a production ensemble is: an acknowledged write is on disk.
      forceSync: true,
      wrap: lab.wrap(host),
    });
    return { name: `zookeeper m${i + 1}`, host, server };
  });
  return {
    kind: 'zookeeper',
    description: `ZooKeeper, ${hosts.length} servers`,
    members,
    url: `zookeeper://${hosts.map((h) => `${h.ip}:2181`).join(',')}/leasehold-lab`,
    async leader() {
      for (const member of members) {
        if (!member.server.running) continue;
        const mode = await (member.server as PrivateZookeeper).mode().catch(() => undefined);
        if (mode === 'leader') return member;
      }
      return undefined;
    },
    stop: () => stopAll(members, dir),
  };
}

/** The bucket a NATS lab cluster's runs use: three copies, one on each server. */
const NATS_BUCKET = 'leasehold-lab';

function natsCluster(lab: NetLab, dir: string, hosts: readonly LabHost[]): LabCluster {
  const routes = hosts.map((h) => `nats-route://${h.ip}:6222`);
  const members = hosts.map((host, i) => {
    const server = new LabNats(join(dir, `n${i + 1}`), {
      name: `n${i + 1}`,
      host: host.ip,
      routes,
      wrap: lab.wrap(host),
    });
    return { name: `nats n${i + 1}`, host, server };
  });
  return {
    kind: 'nats',
    description: `NATS JetStream, ${hosts.length} servers, bucket of ${hosts.length} replicas`,
    members,
    // Every process of a lab reads one machine's clock.
    url: `nats://${hosts.map((h) => `${h.ip}:4222`).join(',')}?bucket=${NATS_BUCKET}&replicas=${hosts.length}&maxClockSkewMs=250`,
    async leader() {
      // The leader that matters is the bucket's stream's: it orders every write.
      for (const member of members) {
        if (!member.server.running) continue;
        const name = await member.server.streamLeader(`KV_${NATS_BUCKET}`).catch(() => undefined);
        const found = members.find((m) => m.server.serverName === name);
        if (found) return found;
      }
      return undefined;
    },
    stop: () => stopAll(members, dir),
  };
}

/**
 * Redis with Sentinel: the data nodes and the Sentinels are all members, so a partition of the
 * leader cuts the primary off from its replica and from every Sentinel (its clients still reach
 * it). No `failover`: the Sentinels make their own.
 */
function sentinelCluster(dir: string, setup: SentinelSetup): LabCluster {
  const data: LabMember[] = [setup.primary, setup.replica];
  const members: LabMember[] = [...data, ...setup.sentinels];
  return {
    kind: 'redis-sentinel',
    description: `Redis primary and replica with ${setup.sentinels.length} Sentinels, asynchronous replication`,
    members,
    url: setup.url,
    async leader() {
      const ip = await setup.primaryIp();
      return data.find((m) => m.host.ip === ip && m.server.running);
    },
    stop: () => stopAll(members, dir),
  };
}

function primaryReplica(
  lab: NetLab,
  dir: string,
  kind: LabClusterKind,
  pair: PrimaryReplica,
): LabCluster {
  const { primary, replica } = pair;
  const members: LabMember[] = [primary, replica];
  let leader: LabMember = primary;
  const replication =
    kind === 'redis'
      ? 'asynchronous replication'
      : kind === 'postgres-sync'
        ? 'synchronous replication'
        : 'asynchronous replication';
  return {
    kind,
    description: `${kind === 'redis' ? 'Redis' : 'PostgreSQL'} primary and replica, ${replication}`,
    members,
    url: pair.url,
    leader: () => Promise.resolve(leader.server.running ? leader : undefined),
    async failover(ms) {
      if (leader !== primary) return 'already failed over: nothing done';
      lab.cut(primary.host, [replica.host]);
      await sleep(ms);
      await pair.promote();
      lab.moveServiceAddress(replica.host);
      leader = replica;
      await primary.server.kill();
      lab.heal();
      return `${primary.name} cut off from ${replica.name}; ${ms} ms later ${replica.name} promoted and given the service address, ${primary.name} killed`;
    },
    stop: () => stopAll(members, dir),
  };
}
