// One worker process of `leasehold demo` and `leasehold verify`: a LeaseManager over the run's
// resources that, for every lease it holds, keeps writing rows to the downstream SQLite file
// through a SqliteFence, and reports every belief and write on stdout (pipe writes are
// synchronous: nothing is lost on exit). It leaves when the command that started it goes away.
// Two other modes share its reports: `--permits` (every worker contends for every resource) and
// verify's hot-lease cycler (`cycle` in its config).
import { readdirSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ErrorCode,
  isLeaseError,
  LeaseClient,
  LeaseManager,
  SqliteFence,
  type HeldLease,
  type LeaseStore,
} from '../../index.js';
import { raiseAfterFlush } from '../../core/stdio.js';
import { openQuietly } from '../open-quietly.js';
import { insertWrite, openDownstream } from './downstream.js';
import { resourceNames } from './demo-settings.js';
import { driftingClock } from './drifting-clock.js';
import { hostNow, workerClock } from './host-clock.js';
import {
  WORKER_ENV,
  type HotCycle,
  type Progress,
  type StallMessage,
  type WorkerConfig,
  type WorkerEvent,
} from './worker-protocol.js';

const config = JSON.parse(process.env[WORKER_ENV] ?? 'null') as WorkerConfig | null;
if (!config) {
  process.stderr.write(
    `${WORKER_ENV} is not set: this worker is started by leasehold demo and leasehold verify\n`,
  );
  process.exit(2);
}
const w = config.id;
const resources = Array.isArray(config.resources)
  ? config.resources
  : resourceNames(config.resources.prefix, config.resources.count);
const owner = config.owner ?? w;
// The `drift` fault: a clock running fast or slow. A lease's deadline is then an instant on that
// clock, reported on the host clock (`deadline`) like every other time.
const clock =
  config.driftRate === 0
    ? workerClock(config.skewMs)
    : driftingClock({ rate: config.driftRate, skewMs: config.skewMs, stepMs: config.driftStepMs });

function report(event: WorkerEvent): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

/** The instant, on the host clock, at which the holder's own clock reaches its deadline. */
function deadline(lease: HeldLease): number {
  return clock.toHost(lease.validUntil);
}

/** What a report says of a lease: its record (a counting lease's permit record), its token. */
function fact(lease: HeldLease): { w: string; resource: string; token: number; at: number } {
  return { w, resource: lease.key, token: lease.token, at: hostNow() };
}

// What a soak watches (`reportEveryMs`): memory, file descriptors and event-loop delay over time.
if (config.reportEveryMs !== undefined && config.reportEveryMs > 0) {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  setInterval(() => {
    let fds = -1;
    try {
      fds = readdirSync('/proc/self/fd').length;
    } catch {
      // no /proc here: -1
    }
    const loopMaxMs = Math.round(delay.max / 1e6);
    delay.reset();
    report({ e: 'process', w, at: hostNow(), rssBytes: process.memoryUsage.rss(), fds, loopMaxMs });
  }, config.reportEveryMs).unref();
}

// The command went away (it exited, or was killed): a worker never outlives it.
process.on('disconnect', () => process.exit(1));
process.stdout.on('error', () => process.exit(1));
// The `stall` fault: a long synchronous call that blocks the event loop, timers and all.
process.on('message', (message: StallMessage) => {
  if (typeof message?.stallMs !== 'number') return;
  const at = hostNow();
  const until = at + message.stallMs;
  while (hostNow() < until) {
    // busy: nothing else in this process runs
  }
  report({ e: 'stalled', w, at, until: hostNow() });
});

/**
 * The progress a grant carried as lease data, if the run keeps progress and the store keeps lease
 * data; `undefined` where not.
 */
function progressOf(lease: HeldLease, store: LeaseStore): Progress | null | undefined {
  if (!config!.progress || !store.capabilities.data) return undefined;
  if (lease.data === null) return null;
  try {
    const value = JSON.parse(
      typeof lease.data === 'string' ? lease.data : Buffer.from(lease.data).toString(),
    ) as Progress;
    if (Number.isSafeInteger(value.token) && Number.isSafeInteger(value.n)) return value;
  } catch {
    // reported below
  }
  warn(`lease data of ${lease.key} is not progress: ${String(lease.data).slice(0, 80)}`);
  return { token: -1, n: -1 };
}

/**
 * On a store with lease data, after each fenced write the holder also writes its progress (a
 * count that goes on from the one its grant carried) with `writeData`, and reports the outcome.
 */
async function writeProgress(lease: HeldLease, progress: Progress): Promise<void> {
  const n = progress.n + 1;
  try {
    await lease.writeData(JSON.stringify({ token: lease.token, n }));
    progress.n = n;
    report({ e: 'data', ...fact(lease), n, outcome: 'landed' });
  } catch (error) {
    const lost = (error as { code?: string }).code;
    report({
      e: 'data',
      ...fact(lease),
      n,
      outcome: lost === 'LEASE_LOST' || lost === 'LEASE_RELEASED' ? 'refused' : 'error',
    });
  }
}

/**
 * One row written to the downstream under `lease` through the fence, reported with its outcome;
 * `seq` numbers the holder's writes under the lease.
 */
function fencedWriter(downstream: string): (lease: HeldLease, seq: number) => Promise<void> {
  const fence = new SqliteFence(openDownstream(downstream));
  let insert: ReturnType<typeof insertWrite> | undefined;
  return async (lease, seq) => {
    try {
      // Fenced per permit: holders of a name's other permits have tokens of their own.
      const result = await fence.write(lease, (db) => {
        insert ??= insertWrite(db);
        return insert.run(lease.key, lease.token, w, seq, hostNow());
      });
      report({
        e: 'write',
        ...fact(lease),
        outcome: result.accepted ? 'accepted' : 'rejected',
        ...(result.accepted ? { commit: Number(result.value.lastInsertRowid) } : {}),
      });
    } catch (error) {
      report({ e: 'write', ...fact(lease), outcome: 'error' });
      warn(`write failed: ${message(error)}`);
    }
  };
}

/**
 * The work tied to a lease: a write every few hundred ms, deliberately NOT preceded by
 * `lease.isValid()`: a write already in flight when the process froze still goes out when it
 * wakes, and only the fence stops it.
 */
function writeLoop(downstream: string, store: LeaseStore): (lease: HeldLease) => Promise<void> {
  const write = fencedWriter(downstream);
  const [min, max] = config!.writeEveryMs;
  return async (lease) => {
    const signal = lease.signal;
    const read = progressOf(lease, store);
    const progress = read === undefined ? undefined : { token: lease.token, n: read?.n ?? 0 };
    // The pause ends when the lease is given up, so a graceful stop does not wait out a long
    // one; a lost lease does not end it, so a worker that froze mid-pause still sends its stale
    // write when it wakes, and the fence has to refuse it.
    const givenUp = new AbortController();
    const onEnd = (): void => {
      if (isLeaseError(signal.reason) && signal.reason.code === ErrorCode.LEASE_RELEASED)
        givenUp.abort();
    };
    if (signal.aborted) onEnd();
    else signal.addEventListener('abort', onEnd, { once: true });
    for (let seq = 1; !signal.aborted; seq++) {
      const paused = await sleep(min + Math.random() * (max - min), true, {
        signal: givenUp.signal,
      }).catch(() => false);
      if (!paused) break;
      await write(lease, seq);
      if (progress && !signal.aborted) await writeProgress(lease, progress);
    }
  };
}

/**
 * The store, on this worker's clock: the stores that judge expiry on the caller's clock (SQLite,
 * DynamoDB, NATS KV, S3) then write and judge `expiresAt` with the worker's skew and drift.
 */
async function openStoreFor(url: string): Promise<LeaseStore> {
  return openQuietly(url, { clock });
}

async function join(): Promise<void> {
  const store = await openStoreFor(config!.store);
  const manager = new LeaseManager({
    store,
    owner,
    group: config!.group,
    resources,
    ttlMs: config!.ttlMs,
    heartbeatMs: config!.heartbeatMs,
    reconcileMs: config!.reconcileMs,
    clock,
    onAcquired: writeLoop(config!.downstream, store),
  });
  manager.on('acquired', (lease) => {
    report({ e: 'acquired', ...fact(lease), until: deadline(lease), ...readOf(lease, store) });
    lease.on('renewed', () => report({ e: 'renewed', ...fact(lease), until: deadline(lease) }));
  });
  manager.on('released', (lease) =>
    report({ e: 'released', ...fact(lease), until: deadline(lease) }),
  );
  manager.on('lost', (lease) => report({ e: 'lost', ...fact(lease), until: deadline(lease) }));
  manager.on('handoff', (lease, reason) => report({ e: 'handoff', ...fact(lease), reason }));
  manager.on('reconcile-failed', (error) => warn(`reconcile failed: ${message(error)}`));
  manager.on('work-failed', (_lease, error) => warn(`work failed: ${message(error)}`));
  // SIGTERM: stop gracefully (abort the work, release everything in one call), then exit by the signal.
  manager.installShutdownHandlers();
  await manager.start();
  report({ e: 'ready', w, pid: process.pid, at: hostNow() });
}

/** The store and a lease client on it, for the workers that run no manager (permits, the hot lease). */
async function openClient(): Promise<{ store: LeaseStore; client: LeaseClient }> {
  const store = await openStoreFor(config!.store);
  const client = new LeaseClient({
    store,
    owner,
    ttlMs: config!.ttlMs,
    heartbeatMs: config!.heartbeatMs,
    clock,
  });
  return { store, client };
}

/**
 * `--permits N`: no manager; for each resource, a loop that takes one of its N permits
 * (`acquire` with `permits`), works under it for a while (half to two and a half TTLs), reports
 * the release about to leave, and gives it back, then contends again. Every worker contends for
 * every resource, so permits change hands all the time.
 */
async function contend(permits: number): Promise<void> {
  const { store, client } = await openClient();
  const work = writeLoop(config!.downstream, store);
  let stopping = false;
  client.on('lost', (lease) => report({ e: 'lost', ...fact(lease), until: deadline(lease) }));
  const loop = async (name: string): Promise<void> => {
    while (!stopping) {
      let lease: HeldLease;
      try {
        lease = await client.acquire(name, { permits, waitMs: 4 * config!.reconcileMs });
      } catch (error) {
        if (stopping) return;
        if (!(isLeaseError(error) && error.code === ErrorCode.LEASE_UNAVAILABLE))
          warn(`acquire failed: ${message(error)}`);
        await sleep(50);
        continue;
      }
      report({ e: 'acquired', ...fact(lease), until: deadline(lease), ...readOf(lease, store) });
      lease.on('renewed', () => report({ e: 'renewed', ...fact(lease), until: deadline(lease) }));
      const working = work(lease);
      const holdMs = config!.ttlMs * (0.5 + 2 * Math.random());
      await sleep(holdMs, undefined, { signal: lease.signal }).catch(() => undefined);
      if (lease.isValid()) {
        report({ e: 'released', ...fact(lease), until: deadline(lease) });
        await lease.release().catch((error: unknown) => warn(`release failed: ${message(error)}`));
      }
      await working;
    }
  };
  const loops = resources.map((name) => loop(name));
  const stop = (signal: NodeJS.Signals): void => {
    stopping = true;
    for (const lease of client.held())
      report({ e: 'released', ...fact(lease), until: deadline(lease) });
    void client
      .close()
      .then(() => Promise.all(loops))
      .then(() => store.close())
      .then(
        () => raiseAfterFlush(signal),
        (error: unknown) => raiseAfterFlush(signal, error),
      );
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => stop(signal));
  report({ e: 'ready', w, pid: process.pid, at: hostNow() });
}

/**
 * verify's hot-lease cycler (`cycle`): no manager; one loop that acquires the hot resource
 * (waiting, woken by a release on stores that announce them, while another cycler holds it),
 * makes one fenced write under it, reports the release about to leave and gives it back, rests a
 * moment and contends again. Its holds are beliefs like any worker's, checked by the same checker.
 */
async function cycle(hot: HotCycle): Promise<void> {
  const { store, client } = await openClient();
  const write = fencedWriter(config!.downstream);
  const stopping = new AbortController();
  const { signal } = stopping;
  const [min, max] = hot.restMs;
  client.on('lost', (lease) => report({ e: 'lost', ...fact(lease), until: deadline(lease) }));
  const loop = async (): Promise<void> => {
    while (!signal.aborted) {
      let lease: HeldLease;
      try {
        lease = await client.acquire(hot.resource, { waitMs: 4 * config!.reconcileMs, signal });
      } catch (error) {
        if (signal.aborted) return;
        if (!(isLeaseError(error) && error.code === ErrorCode.LEASE_UNAVAILABLE)) {
          warn(`acquire failed: ${message(error)}`);
          await sleep(50);
        }
        continue;
      }
      report({ e: 'acquired', ...fact(lease), until: deadline(lease) });
      await write(lease, 1);
      // Stopping: `close()` releases what is held (its release is reported in `stop`).
      if (signal.aborted) return;
      if (lease.isValid()) {
        report({ e: 'released', ...fact(lease), until: deadline(lease) });
        await lease.release().catch((error: unknown) => warn(`release failed: ${message(error)}`));
      }
      const restMs = min + Math.random() * (max - min);
      if (restMs > 0) await sleep(restMs, undefined, { signal }).catch(() => undefined);
    }
  };
  const looping = loop();
  const stop = (how: NodeJS.Signals): void => {
    stopping.abort();
    for (const lease of client.held())
      report({ e: 'released', ...fact(lease), until: deadline(lease) });
    void client
      .close()
      .then(() => looping)
      .then(() => store.close())
      .then(
        () => raiseAfterFlush(how),
        (error: unknown) => raiseAfterFlush(how, error),
      );
  };
  for (const how of ['SIGTERM', 'SIGINT'] as const) process.once(how, () => stop(how));
  report({ e: 'ready', w, pid: process.pid, at: hostNow() });
}

function readOf(lease: HeldLease, store: LeaseStore): { read?: Progress | null } {
  const read = progressOf(lease, store);
  return read === undefined ? {} : { read };
}

function warn(text: string): void {
  report({ e: 'warn', w, at: hostNow(), message: text });
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

(config.cycle ? cycle(config.cycle) : config.permits > 1 ? contend(config.permits) : join()).catch(
  (error: unknown) => {
    process.stderr.write(`${message(error)}\n`);
    process.exit(1);
  },
);
