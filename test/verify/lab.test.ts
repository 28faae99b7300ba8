import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { labClusterUnavailable } from '../../src/cli/harness/lab/lab-cluster.js';
import { labCommand, netlabUnavailable } from '../../src/cli/harness/lab/netlab.js';
import type { JepsenSummary, runJepsenInLab } from '../../src/cli/verify/jepsen.js';
import { describeServer } from '../harness/describe-server.js';

const failoverScript = fileURLToPath(new URL('./lab-failover.mjs', import.meta.url));
const unavailable =
  netlabUnavailable() ??
  labClusterUnavailable('zookeeper') ??
  labClusterUnavailable('redis') ??
  labClusterUnavailable('postgres-sync');

/** Runs `lab-failover.mjs` for `kind` in a network namespace of its own; its JSON answer. */
function failover(kind: string): Promise<Record<string, { token?: number; error?: string }>> {
  const { file, args, env } = labCommand([process.execPath, failoverScript, kind]);
  const child = spawn(file, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return new Promise((resolve, reject) =>
    child.once('close', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`exit ${code}: ${err}`)),
    ),
  );
}

/** Namespaces of labs whose process has ended: left behind (none should be). */
function leftBehind(): string[] {
  const ended = (pid: number): boolean => {
    try {
      process.kill(pid, 0);
      return false;
    } catch {
      return true;
    }
  };
  try {
    return readdirSync('/run/netns').filter((name) => {
      const owner = /^lhlab(\d+)-/.exec(name);
      return owner !== null && ended(Number(owner[1]));
    });
  } catch {
    return [];
  }
}

describeServer('the lab: replicated stores on hosts of their own, links cut', unavailable, () => {
  it('a failover to an asynchronous Redis replica grants a lease twice, with the same token', async () => {
    // Owner a was granted the lease by the primary, cut off from its replica; the promoted
    // replica never heard of it and grants it to b: two holders, one token. This is what
    // `leasehold doctor` reports for a Redis with replicas.
    const outcome = await failover('redis');
    expect(outcome.first).toEqual({ token: 1 });
    expect(outcome.second).toEqual({ token: 1 });
    expect(leftBehind()).toEqual([]);
  }, 60_000);

  it('a PostgreSQL primary with a synchronous standby acknowledges no grant the standby lacks', async () => {
    // The grant waits for the unreachable standby and fails; the promoted standby grants the
    // lease to b, and nobody else ever believed in it.
    const outcome = await failover('postgres-sync');
    expect(outcome.first).toEqual({ error: 'STORE_UNAVAILABLE' });
    expect(outcome.second).toEqual({ token: 1 });
  }, 90_000);

  it('verify in a lab: ZooKeeper with its leader cut off from the other servers stays SAFE', async () => {
    const { runJepsenInLab: run } =
      (await import('../../dist/cli/verify/jepsen.js')) as unknown as {
        runJepsenInLab: typeof runJepsenInLab;
      };
    const summary: JepsenSummary = await run({
      cluster: 'zookeeper',
      faults: ['partition-leader'],
      durationMs: 12_000,
      workers: 3,
      resources: 24,
      ttlMs: 2000,
      seed: 5,
    });
    expect(summary.doctor.filter((f) => f.level === 'unsafe')).toEqual([]);
    expect(summary.violations).toEqual({ overlaps: 0, tokenOrder: 0, staleAccepted: 0, data: 0 });
    expect(summary.safe).toBe(true);
    // The faults happened: each names the leader it cut off.
    expect(summary.injected['partition-leader']).toBeGreaterThanOrEqual(1);
    expect(summary.faultNotes[0]).toMatch(
      /^partition-leader: zookeeper m\d \(leader\) cut off from zookeeper m\d and zookeeper m\d for \d+ ms$/,
    );
    expect(summary.writes.accepted).toBeGreaterThan(100);
    expect(summary.beliefs).toBeGreaterThanOrEqual(24);
    // The hot lease changed hands all run long, and never had two holders.
    expect(summary.hotLease.cycles).toBeGreaterThan(20);
    expect(summary.hotLease.violations).toBe(0);
    expect(leftBehind()).toEqual([]);
  }, 90_000);
});
