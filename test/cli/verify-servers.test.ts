import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EtcdCluster, etcdUnavailable } from '../harness/etcd-server.js';
import { PostgresServer, postgresUnavailable } from '../harness/postgres-server.js';
import { tempDir } from '../harness/processes.js';
import { RedisServer, redisUnavailable } from '../harness/redis-server.js';
import { faultEvidence, verify } from '../verify/run-verify.js';

const dir = tempDir('leasehold-verify-servers-');
const stops: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const stop of stops) await stop().catch(() => undefined);
  dir.cleanup();
});

interface Target {
  name: string;
  unavailable: () => string | null;
  start: () => Promise<{ url: string; stop: () => Promise<void> }>;
  ttl: string;
}

// One bounded run per store on a private server; the store decides expiry on its own clock, so the
// workers' clock offsets (skew) must not matter.
const targets: Target[] = [
  {
    name: 'PostgreSQL',
    unavailable: postgresUnavailable,
    start: () => PostgresServer.start(),
    ttl: '1s',
  },
  { name: 'Redis', unavailable: redisUnavailable, start: () => RedisServer.start(), ttl: '1s' },
  // etcd's own lease TTL is whole seconds, at least about 2 s here.
  { name: 'etcd', unavailable: etcdUnavailable, start: () => EtcdCluster.start(), ttl: '2s' },
];

describe('leasehold verify on servers with their own clock', () => {
  for (const target of targets) {
    const skip = target.unavailable();
    it.skipIf(skip !== null)(
      `${target.name}: safe through kill, stop, pause, stall and skew`,
      async () => {
        const server = await target.start();
        stops.push(() => server.stop());
        const run = await verify(server.url, join(dir.path, target.name), [
          ...['--duration', '10s', '--ttl', target.ttl, '--workers', '4', '--resources', '12'],
          ...['--seed', '5'],
        ]);
        expect(run.out.overlaps).toEqual([]);
        expect(run.out.tokenOrder).toEqual([]);
        expect(run.out.staleAccepted).toEqual([]);
        expect(run.code).toBe(0);
        expect(run.out.notes.join('\n')).toMatch(/decides expiry on its own clock/);
        const evidence = faultEvidence(run.records);
        const timed = Object.entries(run.out.faults)
          .filter(([kind]) => kind !== 'skew')
          .reduce((n, [, count]) => n + count, 0);
        expect(timed).toBeGreaterThanOrEqual(3);
        expect(
          evidence.killed + evidence.pauses + evidence.stalledMs.length,
        ).toBeGreaterThanOrEqual(2);
        expect(run.out.handovers).toBeGreaterThan(0);
        expect(run.out.writes.accepted).toBeGreaterThan(20);
        await server.stop();
      },
      90_000,
    );
  }
});
