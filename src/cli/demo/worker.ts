// One worker process of `leasehold demo`: a LeaseManager over the demo's resources that, for every
// lease it holds, keeps writing rows to the downstream SQLite file through a SqliteFence. It reports
// what it does as JSON lines on stdout (writes to a pipe are synchronous, so nothing is lost when it
// exits right after) and leaves when the demo that started it goes away.
import { setTimeout as sleep } from 'node:timers/promises';
import { LeaseManager, SqliteFence, type HeldLease } from '../../index.js';
import { workerClock } from '../harness/host-clock.js';
import { openQuietly } from '../open-quietly.js';
import { insertWrite, openDownstream } from '../harness/downstream.js';
import { wallNow, type WorkerEvent } from './events.js';
import { resourceNames } from '../harness/demo-settings.js';
import { decodeWorkerConfig, ownerOf } from './worker-config.js';

const config = decodeWorkerConfig(process.env);
const w = config.letter;

function report(event: WorkerEvent): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

function fact(lease: HeldLease): { w: string; resource: string; token: number; at: number } {
  return { w, resource: lease.resource, token: lease.token, at: wallNow() };
}

// The demo went away (it exited, or was killed): a worker never outlives it.
process.on('disconnect', () => process.exit(1));
process.stdout.on('error', () => process.exit(1));

/**
 * The work tied to a lease: a write every 100–200 ms. The wait stands for the work that produces the
 * row, and the write after it is deliberately NOT preceded by `lease.isValid()`: it is a write already
 * in flight, so a process frozen mid-wait still sends it when it wakes, and only the fence stops it.
 */
function writeLoop(downstream: string): (lease: HeldLease) => Promise<void> {
  const fence = new SqliteFence(openDownstream(downstream));
  let insert: ReturnType<typeof insertWrite> | undefined;
  const [min, max] = config.writeEveryMs;
  return async (lease) => {
    const signal = lease.signal;
    for (let seq = 1; !signal.aborted; seq++) {
      await sleep(min + Math.random() * (max - min));
      try {
        const result = await fence.write(lease.resource, lease.token, (db) => {
          insert ??= insertWrite(db);
          return insert.run(lease.resource, lease.token, w, seq, wallNow());
        });
        report({ e: 'write', ...fact(lease), seq, accepted: result.accepted });
      } catch (error) {
        warn(`write failed: ${message(error)}`);
      }
    }
  };
}

/** Joins the fleet; the work starts as leases come. */
async function join(): Promise<void> {
  const store = await openQuietly(config.store);
  const manager = new LeaseManager({
    store,
    owner: ownerOf(w),
    group: config.group,
    resources: resourceNames(config.resourcePrefix, config.resourceCount),
    ttlMs: config.ttlMs,
    heartbeatMs: config.heartbeatMs,
    reconcileMs: config.reconcileMs,
    // Deadlines on the host's shared monotonic clock, the one every event is reported on, so a
    // lease's `validUntil` is reported as it is.
    clock: workerClock(0),
    onAcquired: writeLoop(config.downstream),
  });
  manager.on('acquired', (lease) => {
    report({ e: 'acquired', ...fact(lease), validUntilWall: lease.validUntil });
    lease.on('renewed', () =>
      report({ e: 'renewed', ...fact(lease), validUntilWall: lease.validUntil }),
    );
  });
  manager.on('released', (lease) =>
    report({ e: 'released', ...fact(lease), validUntilWall: lease.validUntil }),
  );
  manager.on('lost', (lease) =>
    report({ e: 'lost', ...fact(lease), validUntilWall: lease.validUntil }),
  );
  manager.on('handoff', (lease, reason) => report({ e: 'handoff', ...fact(lease), reason }));
  manager.on('reconcile-failed', (error) => warn(`reconcile failed: ${message(error)}`));
  manager.on('work-failed', (_lease, error) => warn(`work failed: ${message(error)}`));
  // SIGTERM: stop gracefully (abort the work, release everything in one call), then exit by the signal.
  manager.installShutdownHandlers();
  await manager.start();
  report({ e: 'ready', w, pid: process.pid, at: wallNow() });
}

function warn(text: string): void {
  report({ e: 'warn', w, at: wallNow(), message: text });
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

join().catch((error: unknown) => {
  process.stderr.write(`${message(error)}\n`);
  process.exit(1);
});
