import { setTimeout as sleep } from 'node:timers/promises';
import type { LabCluster } from '../harness/lab/lab-cluster.js';
import type { NetLab } from '../harness/lab/netlab.js';
import type { FaultRecord, HistoryRecord } from '../harness/history-format.js';
import { hostNow } from '../harness/host-clock.js';
import type { ClusterFault } from './faults.js';

/** A lab verify runs in: its network and the replicated store on it. */
export interface VerifyLab {
  readonly net: NetLab;
  readonly cluster: LabCluster;
}

/**
 * Injects one cluster fault and returns once it is over, recorded as a fault from `at` to `until`:
 * - `partition-leader`: the member that leads is cut off from the other members (its clients still
 *   reach it) for 1.5–2.5 TTLs;
 * - `partition-holder`: `victim`, a worker holding leases, is cut off from every member for 1.5–2.5
 *   TTLs (it keeps running and writing to the downstream, where the fence must stop it);
 * - `kill-leader`: the leading member is SIGKILLed and started again 0.5–1.5 TTLs later on its folder;
 * - `failover` (a primary and its replica): the primary is cut off from the replica for 0.5–1 TTL
 *   while clients go on with it, then the replica is promoted and takes the service address.
 * With no leader to be found, nothing is done and the record says so.
 */
export async function injectClusterFault(
  kind: ClusterFault,
  lab: VerifyLab,
  ctx: { ttlMs: number; random: () => number; records: HistoryRecord[]; victim?: string },
): Promise<void> {
  const { net, cluster } = lab;
  const fault: FaultRecord = { type: 'fault', kind, at: hostNow() };
  ctx.records.push(fault);
  const hosts = cluster.members.map((m) => m.host);
  try {
    if (kind === 'partition-holder') {
      if (ctx.victim === undefined) throw new Error('no worker to cut off');
      fault.worker = ctx.victim;
      const ms = Math.round(ctx.ttlMs * (1.5 + ctx.random()));
      fault.note = `worker ${ctx.victim} cut off from every member for ${ms} ms`;
      net.cut(net.host(ctx.victim), hosts);
      await sleep(ms);
      return;
    }
    if (kind === 'failover') {
      if (!cluster.failover) {
        fault.note = `${cluster.description} elects its own leader: no failover to make`;
        return;
      }
      fault.note = await cluster.failover(Math.round(ctx.ttlMs * (0.5 + 0.5 * ctx.random())));
      return;
    }
    const leader = await cluster.leader();
    if (!leader) {
      fault.note = 'no leader found: nothing done';
      return;
    }
    if (kind === 'partition-leader') {
      const ms = Math.round(ctx.ttlMs * (1.5 + ctx.random()));
      const others = cluster.members.filter((m) => m !== leader);
      fault.note = `${leader.name} (leader) cut off from ${others.map((m) => m.name).join(' and ')} for ${ms} ms`;
      net.cut(
        leader.host,
        others.map((m) => m.host),
      );
      await sleep(ms);
    } else {
      const ms = Math.round(ctx.ttlMs * (0.5 + ctx.random()));
      fault.note = `${leader.name} (leader) killed, started again ${ms} ms later`;
      await leader.server.kill();
      await sleep(ms);
      await leader.server.launch(60_000);
    }
  } finally {
    net.heal();
    fault.until = hostNow();
  }
}
