// How contenders share a noisy machine fairly: within a round they take turns in an order
// shuffled every turn, so every contender sees the same moments of load and none always follows
// the same other one (and inherits its garbage). Ratios are then taken within a round.
//
// A contender is `{ cycle(worker), close() }`: one acquire and one release of the worker's own key.
import { treeCpuUs } from './cpu.mjs';
import { median, shuffled } from './stats.mjs';

/**
 * One in flight: `cycles` turns in which each contender runs one cycle. Per contender, cycles per
 * second over the round (`mean`) and at its median cycle (`rate`), which a stall landing on one
 * contender's cycle does not move; with `keepTimes`, every cycle's time in ms (`times`).
 */
export async function interleaved(list, cycles, seed = 0, { keepTimes = false } = {}) {
  const times = list.map(() => []);
  for (let i = 0; i < cycles; i++) {
    for (const at of shuffled(list.length, seed * cycles + i)) {
      const t0 = performance.now();
      await list[at].cycle(0);
      times[at].push(performance.now() - t0);
    }
  }
  return times.map((ms) => ({
    rate: 1000 / median(ms),
    mean: ms.length / (ms.reduce((a, b) => a + b, 0) / 1000),
    cycles: ms.length,
    ...(keepTimes ? { times: ms } : {}),
  }));
}

/**
 * `inFlight` workers, each cycling its own key, for about `ms`; the cycles and seconds. Each
 * cycle's time in ms is pushed onto `times` when given.
 */
export async function slice(contender, inFlight, ms, times) {
  let cycles = 0;
  const t0 = performance.now();
  const end = t0 + ms;
  // The clock, not a timer: a contender whose calls are synchronous (better-sqlite3) never lets
  // a timer run.
  await Promise.all(
    Array.from({ length: inFlight }, async (_, w) => {
      while (performance.now() < end) {
        const c0 = times ? performance.now() : 0;
        await contender.cycle(w);
        times?.push(performance.now() - c0);
        cycles++;
      }
    }),
  );
  return { cycles, seconds: (performance.now() - t0) / 1000 };
}

/**
 * Several in flight: `slices` turns in which every contender runs `ms / slices`. Per contender,
 * cycles per second over its turns and per cycle: CPU here, CPU of the server's process tree
 * (`serverPid`), and requests the server received (`probe()`, a cumulative counter, when given);
 * with `keepTimes`, every cycle's time in ms (`times`).
 */
export async function sliced(
  list,
  { inFlight, ms, slices, seed = 0, serverPid, probe, keepTimes = false },
) {
  const sums = list.map(() => ({ cycles: 0, seconds: 0, clientUs: 0, serverUs: 0, requests: 0 }));
  const times = list.map(() => (keepTimes ? [] : undefined));
  for (let turn = 0; turn < slices; turn++) {
    for (const at of shuffled(list.length, seed * slices + turn)) {
      const before = probe ? await probe() : 0;
      const server0 = treeCpuUs(serverPid);
      const client0 = process.cpuUsage();
      const { cycles, seconds } = await slice(list[at], inFlight, ms / slices, times[at]);
      const client = process.cpuUsage(client0);
      const s = sums[at];
      s.serverUs += treeCpuUs(serverPid) - server0;
      s.clientUs += client.user + client.system;
      s.requests += probe ? (await probe()) - before : NaN;
      s.cycles += cycles;
      s.seconds += seconds;
    }
  }
  return sums.map((s, k) => ({
    rate: s.cycles / s.seconds,
    cycles: s.cycles,
    ...(keepTimes ? { times: times[k] } : {}),
    clientCpuUs: s.clientUs / s.cycles,
    serverCpuUs: serverPid ? s.serverUs / s.cycles : NaN,
    requests: s.requests / s.cycles,
  }));
}

/** How many interleaved cycles make a round of about `ms` per contender, from a timed warm-up. */
export async function cyclesFor(list, ms, { min = 20, max = 5000 } = {}) {
  const each = [];
  for (const c of list) {
    const t0 = performance.now();
    for (let i = 0; i < 10; i++) await c.cycle(0);
    each.push((performance.now() - t0) / 10);
  }
  const mean = each.reduce((a, b) => a + b, 0) / each.length;
  return Math.max(min, Math.min(max, Math.round(ms / mean)));
}

/**
 * As many slices as `plan.slices`, but each at least twice as long as one batch of `inFlight`
 * cycles takes: on a slow store a slice shorter than that would time mostly the stragglers.
 */
export async function slicesFor(opened, inFlight, plan) {
  let batchMs = 0;
  for (const o of opened) {
    const t0 = performance.now();
    await Promise.all(Array.from({ length: inFlight }, (_, w) => o.cycle(w)));
    batchMs = Math.max(batchMs, performance.now() - t0);
  }
  return Math.max(1, Math.min(plan.slices, Math.floor(plan.slicedMs / (2 * batchMs))));
}
