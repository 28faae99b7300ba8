import { setTimeout as sleep } from 'node:timers/promises';
import type { StoreFault } from './faults.js';
import type { FaultRecord, HistoryRecord } from '../harness/history-format.js';
import { hostNow } from '../harness/host-clock.js';
import type { PrivateServer } from '../harness/servers/private-server.js';

/**
 * `store-pause`: SIGSTOP of the server's whole process tree for a seeded time, half the time
 * shorter than the TTL (0.2–0.8×) and half the time longer (1.5–2.5×), then SIGCONT.
 * `store-restart`: SIGKILL of the tree, then the server starts again on the same port and folder.
 * Both are recorded as faults lasting from `at` to `until`; a server that does not come back
 * rejects.
 */
export async function injectStoreFault(
  kind: StoreFault,
  server: PrivateServer,
  ctx: { ttlMs: number; random: () => number; records: HistoryRecord[] },
): Promise<void> {
  const fault: FaultRecord = { type: 'fault', kind, at: hostNow() };
  ctx.records.push(fault);
  const before = server.pid;
  if (kind === 'store-pause') {
    const longer = ctx.random() < 0.5;
    const ms = Math.round(ctx.ttlMs * (longer ? 1.5 + ctx.random() : 0.2 + 0.6 * ctx.random()));
    fault.until = fault.at + ms;
    fault.note = `${server.program} pid ${before} stopped for ${ms} ms, ${longer ? 'longer' : 'shorter'} than the TTL`;
    server.pause();
    await sleep(ms);
    server.resume();
  } else {
    fault.note = `${server.program} pid ${before} killed`;
    await server.restart();
    fault.note = `${server.program} pid ${before} killed, pid ${server.pid} started on the same port and folder`;
  }
  fault.until = hostNow();
}
