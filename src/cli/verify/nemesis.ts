import { CliFailure, scrubPassword } from '../output.js';
import type { Fleet, WorkerProcess } from '../harness/fleet.js';
import type { FaultRecord, HistoryRecord } from '../harness/history-format.js';
import { hostNow } from '../harness/host-clock.js';
import { injectClusterFault, type VerifyLab } from './cluster-fault.js';
import { isClusterFault, isStoreFault, TIMED_FAULTS, type FaultName } from './faults.js';
import type { PrivateServer } from './private-servers.js';
import { injectStoreFault } from './store-fault.js';

/** What the nemesis reads of verify's options. */
export interface NemesisOptions {
  store: string;
  durationMs: number;
  ttlMs: number;
  faults: FaultName[];
  /** The time between two faults; about a TTL by default. */
  faultEveryMs?: number;
}

export interface NemesisContext {
  fleet: Fleet;
  /** The private server verify started, for `store-pause` and `store-restart`. */
  server: PrivateServer | undefined;
  /** The lab verify runs in, for the cluster faults. */
  lab?: VerifyLab | undefined;
  options: NemesisOptions;
  random: () => number;
  records: HistoryRecord[];
  stalls: Map<string, FaultRecord>;
  start: () => Promise<WorkerProcess>;
  startedAt: number;
  notes: string[];
}

/** Injects the timed faults on a seeded schedule until the run's time is up. */
export async function nemesis(ctx: NemesisContext): Promise<void> {
  const { fleet, options, random, records } = ctx;
  const { ttlMs } = options;
  const kinds = options.faults.filter(
    (f) =>
      (TIMED_FAULTS as readonly string[]).includes(f) ||
      (ctx.server && isStoreFault(f)) ||
      (ctx.lab && isClusterFault(f)),
  );
  const endAt = ctx.startedAt + options.durationMs;
  const pending: Promise<unknown>[] = [];
  // One store or cluster fault at a time; one that fails (the server did not come back) ends the run.
  let storeBusy = false;
  let storeFailure: Error | undefined;
  const replace = (): void => {
    pending.push(
      ctx
        .start()
        .catch((error: unknown) =>
          ctx.notes.push(
            `replacement: ${scrubPassword((error as Error).message, ctx.options.store)}`,
          ),
        ),
    );
  };
  // Kinds come from a bag refilled in a seeded order, so every fault asked for is injected within
  // the first few (drawing each independently left one out of a short run now and then).
  let bag: FaultName[] = [];
  const nextKind = (): FaultName => {
    if (bag.length === 0) {
      bag = [...kinds];
      for (let i = bag.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [bag[i], bag[j]] = [bag[j]!, bag[i]!];
      }
    }
    return bag.pop()!;
  };
  // Let the fleet settle for a TTL before the first fault.
  await wait(Math.min(ttlMs, endAt - hostNow()));
  while (hostNow() < endAt && !storeFailure) {
    const running = fleet.running();
    if (kinds.length > 0 && running.length >= 2) {
      const kind = nextKind();
      // A kill or stop is aimed at a worker that holds something, when one does: one that holds
      // nothing (a replacement still joining) would show no takeover.
      const holders = running.filter((w) => w.holding.size > 0);
      const pool = (kind === 'kill' || kind === 'stop') && holders.length > 0 ? holders : running;
      const victim = pool[Math.floor(random() * pool.length)]!;
      const at = hostNow();
      const holding = holders.length > 0 ? holders : running;
      // A store fault drawn while another runs goes back into the bag, under the others.
      if ((isClusterFault(kind) || isStoreFault(kind)) && storeBusy) bag.unshift(kind);
      if (isClusterFault(kind)) {
        if (!storeBusy && ctx.lab) {
          storeBusy = true;
          // A failover happens once: the old primary is gone for good after it.
          if (kind === 'failover') kinds.splice(kinds.indexOf(kind), 1);
          const victim = holding[Math.floor(random() * holding.length)]!.id;
          pending.push(
            injectClusterFault(kind, ctx.lab, { ttlMs, random, records, victim })
              .catch((error: unknown) => (storeFailure = error as Error))
              .finally(() => (storeBusy = false)),
          );
        }
      } else if (isStoreFault(kind)) {
        if (!storeBusy && ctx.server) {
          storeBusy = true;
          pending.push(
            injectStoreFault(kind, ctx.server, { ttlMs, random, records })
              .catch((error: unknown) => (storeFailure = error as Error))
              .finally(() => (storeBusy = false)),
          );
        }
      } else if (kind === 'kill') {
        records.push({ type: 'fault', kind, worker: victim.id, at });
        fleet.signal(victim.id, 'SIGKILL');
        replace();
      } else if (kind === 'stop') {
        records.push({ type: 'fault', kind, worker: victim.id, at });
        fleet.signal(victim.id, 'SIGTERM');
        pending.push(victim.closed.then(replace));
      } else if (kind === 'pause') {
        const ms = 2 * ttlMs;
        records.push({ type: 'fault', kind, worker: victim.id, at, until: at + ms });
        fleet.pause(victim.id, ms + 5000);
        setTimeout(() => fleet.resume(victim.id), ms).unref();
      } else {
        const ms = Math.round(1.5 * ttlMs);
        const fault: FaultRecord = { type: 'fault', kind, worker: victim.id, at, until: at + ms };
        records.push(fault);
        ctx.stalls.set(victim.id, fault);
        fleet.stall(victim.id, ms);
      }
    }
    const gap = options.faultEveryMs ?? ttlMs;
    await wait(Math.min(gap * (0.75 + random()), endAt - hostNow()));
  }
  await Promise.all(pending);
  if (storeFailure)
    throw new CliFailure(`could not run: a store fault failed: ${storeFailure.message}`, 2);
}

function wait(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.max(0, ms)));
}
