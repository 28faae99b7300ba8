import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PrivateRedis, PrivateSentinel, redisUnavailable } from '../servers/redis-server.js';
import { until, untilReplicaSyncs } from './lab-replicated.js';
import type { LabHost, NetLab } from './netlab.js';

const run = promisify(execFile);

/** The master group the Sentinels watch, by the name clients ask for. */
const GROUP = 'leasehold';
/** Sentinels that must find the primary down before one of them fails over. */
const QUORUM = 2;
const SENTINEL_PORT = 26379;

/** Why the Sentinel setup cannot run here, or `null`. */
export function sentinelUnavailable(): string | null {
  return redisUnavailable({ cli: true });
}

/** Sentinels wait up to 1 s to reconnect: a shorter down-after could call a new primary down at once. */
const DOWN_AFTER_MS = 1500;

/** `SENTINEL …args` on the Sentinel at `ip`: its reply, one line per element (half a second at most). */
async function ask(ip: string, ...args: string[]): Promise<string[]> {
  const { stdout } = await run(
    'redis-cli',
    ['-h', ip, '-p', String(SENTINEL_PORT), 'sentinel', ...args],
    { timeout: 500 },
  );
  return stdout.trim().split('\n');
}

/** A server of the Sentinel setup on its lab host. */
export interface SentinelMember<S extends PrivateRedis | PrivateSentinel> {
  readonly name: string;
  readonly host: LabHost;
  readonly server: S;
}

/** A Redis primary and replica, and the Sentinels that watch them. */
export interface SentinelSetup {
  readonly primary: SentinelMember<PrivateRedis>;
  readonly replica: SentinelMember<PrivateRedis>;
  readonly sentinels: readonly SentinelMember<PrivateSentinel>[];
  /** The store URL: the Sentinels to ask for the primary of the group `leasehold`. */
  readonly url: string;
  /**
   * The address of the primary as the Sentinels name it (`SENTINEL get-master-addr-by-name`): the
   * one most of them name, if at least a quorum (2) do; `undefined` otherwise.
   */
  primaryIp(): Promise<string | undefined>;
}

/**
 * Redis with Sentinel: a primary and a replica, each on a host of its own, both with the
 * append-only file fsynced at every write; replication is Redis's own, asynchronous. Three
 * Sentinels, each on a host of its own, watch them and fail over when the primary stops answering
 * them. Returns once every Sentinel knows the replica and the two other Sentinels.
 * The replica follows the primary by `REPLICAOF`, not by `--replicaof`: a data node started again
 * after `kill` comes back a primary, and the Sentinels make it a replica of the one they chose.
 */
export async function startLabSentinel(lab: NetLab, dir: string): Promise<SentinelSetup> {
  const [a, b] = [lab.addHost('redis-1'), lab.addHost('redis-2')];
  const dataNode = (name: string, host: LabHost): SentinelMember<PrivateRedis> => {
    mkdirSync(join(dir, name));
    const server = new PrivateRedis(join(dir, name), {
      port: 6379,
      aof: true,
      args: ['--bind', '0.0.0.0'],
      wrap: lab.wrap(host),
    });
    return { name: `redis ${name}`, host, server };
  };
  const primary = dataNode('r1', a);
  const replica = dataNode('r2', b);
  const sentinels = [1, 2, 3].map((i): SentinelMember<PrivateSentinel> => {
    const host = lab.addHost(`sentinel-${i}`);
    mkdirSync(join(dir, `s${i}`));
    const server = new PrivateSentinel(join(dir, `s${i}`), {
      port: SENTINEL_PORT,
      bind: '0.0.0.0',
      announceIp: host.ip,
      master: { name: GROUP, host: a.ip, port: 6379, quorum: QUORUM },
      downAfterMs: DOWN_AFTER_MS,
      failoverTimeoutMs: 5000,
      wrap: lab.wrap(host),
    });
    return { name: `sentinel s${i}`, host, server };
  });
  const servers = [primary, replica, ...sentinels].map((m) => m.server);
  try {
    await Promise.all([primary.server.launch(30_000), replica.server.launch(30_000)]);
    await run('redis-cli', ['-h', b.ip, 'replicaof', a.ip, '6379']);
    await untilReplicaSyncs(b.ip);
    await Promise.all(sentinels.map((s) => s.server.launch(30_000)));
    // Sentinels find the replica in the primary's INFO and each other by its hello channel.
    await until(async () => {
      const views = await Promise.all(sentinels.map((s) => ask(s.host.ip, 'master', GROUP)));
      return views.every((view) => {
        const field = (name: string): string | undefined => view[view.indexOf(name) + 1];
        return field('num-slaves') === '1' && field('num-other-sentinels') === '2';
      });
    }, 'the Sentinels to know the replica and each other');
  } catch (error) {
    await Promise.allSettled(servers.map((s) => s.stop()));
    throw error;
  }
  const [first, ...others] = sentinels.map((s) => `${s.host.ip}:${SENTINEL_PORT}`);
  return {
    primary,
    replica,
    sentinels,
    url: `redis://${first}?sentinel=${GROUP}&sentinels=${others.join(',')}`,
    async primaryIp() {
      const answers = await Promise.all(
        sentinels
          .filter((s) => s.server.running)
          .map((s) => ask(s.host.ip, 'get-master-addr-by-name', GROUP).catch(() => [])),
      );
      const votes = new Map<string, number>();
      for (const [ip] of answers) if (ip) votes.set(ip, (votes.get(ip) ?? 0) + 1);
      const [best] = [...votes].sort((x, y) => y[1] - x[1]);
      return best && best[1] >= QUORUM ? best[0] : undefined;
    },
  };
}
