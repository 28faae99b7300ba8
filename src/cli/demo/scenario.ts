import { setTimeout as sleep } from 'node:timers/promises';
import { formatDuration } from '../duration.js';
import type { DemoSettings } from '../harness/demo-settings.js';
import { letter } from '../harness/demo-settings.js';
import { hostNow } from '../harness/host-clock.js';
import type { Fleet } from '../harness/fleet.js';
import type { Monitor } from './monitor.js';
import { writeLocksFree } from './sqlite-lock.js';

export type PhaseKind = 'start' | 'sigkill' | 'sigterm' | 'sigstop' | 'join';

/** What one step of the run did and how the fleet came through it. */
export interface PhaseResult {
  /** 0 for the start, then 1 to 4 for the faults. */
  step: number;
  kind: PhaseKind;
  title: string;
  victim: string | null;
  /** Wall time of the fault (or of starting the processes). */
  at: number;
  endedAt: number;
  /** Resources the victim held at the fault, with its tokens. */
  orphans: number;
  /**
   * From the fault until every orphan had been acquired by another worker; for the start and a
   * joining worker, until the fleet was balanced. `null`: it did not happen in time.
   */
  recoveryMs: number | null;
  /** From the fault until the last ownership change before the fleet settled (all owned, balanced). */
  settledMs: number | null;
  /** Leases handed to a less loaded worker. */
  handoffs: number;
  /** Leases the victim released on its way out (SIGTERM). */
  releasedOnShutdown: number;
  writesAccepted: number;
  writesRejected: number;
  /** Rejected writes the victim itself sent (its in-flight writes after SIGCONT). */
  victimWritesRejected: number;
  /** How long the victim stayed stopped (SIGSTOP only). */
  pausedMs?: number;
}

export interface ScenarioContext {
  fleet: Fleet;
  monitor: Monitor;
  settings: DemoSettings;
  /** SQLite files whose write lock a frozen worker must not be holding. */
  sqliteFiles: string[];
  /** Shows the current phase: a title and a line that explains it. */
  phase(title: string, detail: string): void;
  /** A progress line. */
  say(text: string): void;
}

/**
 * The run: start the fleet, then SIGKILL one worker, SIGTERM another, SIGSTOP a third past its TTL,
 * and start a new one, letting the fleet settle after each and measuring how it recovered.
 */
export async function runScenario(ctx: ScenarioContext): Promise<PhaseResult[]> {
  const { settings } = ctx;
  const results: PhaseResult[] = [];
  results.push(await startFleet(ctx));
  results.push(await fault(ctx, 1, 'sigkill', letter(0)));
  results.push(await fault(ctx, 2, 'sigterm', letter(1)));
  results.push(await fault(ctx, 3, 'sigstop', letter(2)));
  results.push(await join(ctx, 4, letter(settings.workers)));
  return results;
}

async function startFleet(ctx: ScenarioContext): Promise<PhaseResult> {
  const { fleet, settings } = ctx;
  const letters = Array.from({ length: settings.workers }, (_, i) => letter(i));
  ctx.phase(
    `starting ${settings.workers} worker processes (${letters.join(' ')})`,
    'each joins the fleet and takes an even share; the first to scan takes more and hands some over',
  );
  const at = hostNow();
  const workers = await Promise.all(letters.map((l) => fleet.start(l, settings.readyTimeoutMs)));
  ctx.say(`started workers ${workers.map((w) => `${w.id} (pid ${w.pid})`).join(', ')}`);
  const settledMs = await settle(ctx, at, () => true);
  return finish(
    ctx,
    { step: 0, kind: 'start', title: `start ${settings.workers} workers`, victim: null, at },
    new Map(),
    settledMs,
    settledMs,
  );
}

async function fault(
  ctx: ScenarioContext,
  step: number,
  kind: 'sigkill' | 'sigterm' | 'sigstop',
  victim: string,
): Promise<PhaseResult> {
  const { fleet, monitor, settings } = ctx;
  const ttl = formatDuration(settings.ttlMs);
  const title =
    kind === 'sigkill'
      ? `SIGKILL worker ${victim}`
      : kind === 'sigterm'
        ? `SIGTERM worker ${victim}`
        : `SIGSTOP worker ${victim} for ${formatDuration(settings.pauseMs)}`;
  const explain =
    kind === 'sigkill'
      ? `a crash: its leases expire after the TTL (${ttl}) and peers reclaim them`
      : kind === 'sigterm'
        ? 'a graceful shutdown: it releases everything in one call; peers take over on the release notice or at their next scan'
        : `a freeze past the TTL (${ttl}): peers take over with higher tokens; its writes in flight reach the fence late`;
  ctx.phase(`(${step}/4) ${title}`, explain);
  const orphansOf = (): Map<string, number> =>
    new Map(
      monitor.ownership.heldBy(victim).map((r) => [r, monitor.ownership.owners.get(r)!.token]),
    );

  let at: number;
  let orphans: Map<string, number>;
  let pausedMs: number | undefined;
  if (kind === 'sigstop') {
    at = await freeze(ctx, victim);
    await sleep(20); // read what it reported before it froze
    orphans = orphansOf();
    ctx.say(`(${step}) ${title}: it held ${orphans.size} leases`);
    await waitFor(() => {
      const elapsed = hostNow() - at;
      if (elapsed >= settings.maxPauseMs) return true;
      return (
        elapsed >= settings.pauseMs &&
        monitor.recoveredAt(orphans, victim, at) !== null &&
        monitor.rewritten(orphans)
      );
    });
    fleet.resume(victim);
    pausedMs = hostNow() - at;
    ctx.phase(
      `(${step}/4) SIGCONT worker ${victim}`,
      'it wakes up: its writes in flight carry old tokens and the fence rejects them; then it notices the loss and rejoins',
    );
    ctx.say(`    SIGCONT worker ${victim} after ${formatDuration(pausedMs)}`);
  } else if (kind === 'sigkill') {
    at = hostNow();
    fleet.signal(victim, 'SIGKILL');
    await fleet.workers.get(victim)!.closed; // everything it reported before it died has been read
    orphans = orphansOf();
    ctx.say(`(${step}) ${title}: it held ${orphans.size} leases`);
  } else {
    orphans = orphansOf();
    at = hostNow();
    fleet.signal(victim, 'SIGTERM');
    ctx.say(`(${step}) ${title}: it held ${orphans.size} leases`);
  }

  const settledMs = await settle(ctx, at, () => {
    if (monitor.recoveredAt(orphans, victim, at) === null) return false;
    if (kind === 'sigterm') return fleet.workers.get(victim)!.status === 'exited';
    // The resumed worker must have noticed every lease it lost, so its late writes are on record.
    if (kind === 'sigstop')
      return [...orphans].every(([r, token]) => !monitor.history.beliefs.isOpen(victim, r, token));
    return true;
  });
  const recoveredAt = monitor.recoveredAt(orphans, victim, at);
  const recoveryMs = recoveredAt === null ? null : recoveredAt - at;
  const result = finish(ctx, { step, kind, title, victim, at }, orphans, recoveryMs, settledMs);
  if (pausedMs !== undefined) result.pausedMs = pausedMs;
  return result;
}

/**
 * SIGSTOPs the victim at a moment it holds no SQLite write lock: a process frozen inside a
 * transaction would stall every other writer of that file until it resumes (SQLite's one-writer
 * rule), which is a different fault from the one this step shows. When that happens, it resumes
 * the victim at once and tries again.
 */
async function freeze(ctx: ScenarioContext, victim: string): Promise<number> {
  const { fleet } = ctx;
  for (let attempt = 1; ; attempt++) {
    const at = hostNow();
    fleet.pause(victim, ctx.settings.maxPauseMs + 2000);
    await waitFor(() => fleet.isStopped(victim), 1000, 2);
    if (attempt >= 10 || (await writeLocksFree(ctx.sqliteFiles))) return at;
    fleet.resume(victim);
    ctx.say(`    worker ${victim} froze holding a SQLite write lock; resumed it, trying again`);
    await sleep(10 + Math.random() * 40);
  }
}

async function join(ctx: ScenarioContext, step: number, newcomer: string): Promise<PhaseResult> {
  const { fleet, settings } = ctx;
  ctx.phase(
    `(${step}/4) start worker ${newcomer}`,
    'the fleet rebalances: busier workers hand leases over to the newcomer',
  );
  const at = hostNow();
  const worker = await fleet.start(newcomer, settings.readyTimeoutMs);
  ctx.say(`(${step}) started worker ${newcomer} (pid ${worker.pid})`);
  const settledMs = await settle(ctx, at, () => true);
  return finish(
    ctx,
    { step, kind: 'join', title: `new worker ${newcomer}`, victim: null, at },
    new Map(),
    settledMs,
    settledMs,
  );
}

function finish(
  ctx: ScenarioContext,
  base: Pick<PhaseResult, 'step' | 'kind' | 'title' | 'victim' | 'at'>,
  orphans: ReadonlyMap<string, number>,
  recoveryMs: number | null,
  settledMs: number | null,
): PhaseResult {
  const endedAt = hostNow();
  const tally = ctx.monitor.tally(base.at, endedAt);
  const result: PhaseResult = {
    ...base,
    endedAt,
    orphans: orphans.size,
    recoveryMs,
    settledMs,
    handoffs: tally.handoffs,
    releasedOnShutdown:
      base.kind === 'sigterm' ? countReleases(ctx, base.victim!, base.at, endedAt) : 0,
    writesAccepted: tally.writesAccepted,
    writesRejected: tally.writesRejected,
    victimWritesRejected: base.victim ? (tally.rejectedBy.get(base.victim) ?? 0) : 0,
  };
  const recovered =
    recoveryMs === null ? 'NOT recovered in time' : `recovered in ${formatDuration(recoveryMs)}`;
  const settled = settledMs === null ? 'did not settle' : `settled in ${formatDuration(settledMs)}`;
  ctx.say(
    `    ${recovered}, ${settled}; handoffs ${result.handoffs + result.releasedOnShutdown}, fenced writes ${result.writesAccepted} accepted / ${result.writesRejected} rejected`,
  );
  return result;
}

function countReleases(ctx: ScenarioContext, victim: string, from: number, to: number): number {
  return ctx.monitor.log.filter(
    (e) => e.e === 'released' && e.w === victim && e.at >= from && e.at < to,
  ).length;
}

/**
 * Waits until every resource is owned by a running worker, each within one of an even share, ownership
 * has not moved for the quiet period, and `ready()` holds. Returns the time from `from` to the last
 * ownership change, or null when the fleet did not settle in time.
 */
async function settle(
  ctx: ScenarioContext,
  from: number,
  ready: () => boolean,
): Promise<number | null> {
  const { monitor, settings } = ctx;
  const deadline = from + settings.settleTimeoutMs;
  let settled = false;
  await waitFor(() => {
    const changed = Math.max(monitor.ownership.changedAt, from);
    settled =
      monitor.ownership.settled(monitor.live()) &&
      ready() &&
      hostNow() - changed >= settings.quietMs;
    return settled || hostNow() >= deadline;
  });
  return settled ? Math.max(monitor.ownership.changedAt, from) - from : null;
}

async function waitFor(check: () => boolean, timeoutMs = Infinity, everyMs = 25): Promise<void> {
  const end = hostNow() + timeoutMs;
  while (!check() && hostNow() < end) await sleep(everyMs);
}
