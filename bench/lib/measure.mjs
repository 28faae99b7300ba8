// Timing one call: wall time, CPU time of this process, RSS, and the longest event-loop stall
// (the longest gap between runs of a 1 ms interval) while it ran.

/** Starts watching the event loop; `stop()` answers the longest gap so far, in ms. */
export function watchStalls() {
  let last = performance.now();
  let longest = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 1);
  return {
    stop: () => {
      clearInterval(timer);
      return Math.max(longest, performance.now() - last);
    },
  };
}

const MB = 2 ** 20;

/** Runs `work` once; `{ result, wallMs, cpuMs, rssMB, rssGrowthMB, stallMs }`. */
export async function measure(work) {
  globalThis.gc?.();
  const rss0 = process.memoryUsage().rss;
  const cpu0 = process.cpuUsage();
  const stalls = watchStalls();
  const t0 = performance.now();
  let result;
  try {
    result = await work();
  } catch (error) {
    stalls.stop();
    throw error;
  }
  const wallMs = performance.now() - t0;
  const stallMs = stalls.stop();
  const cpu = process.cpuUsage(cpu0);
  const rss = process.memoryUsage().rss;
  return {
    result,
    wallMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    rssMB: rss / MB,
    rssGrowthMB: (rss - rss0) / MB,
    stallMs,
  };
}

export const round1 = (x) => (Number.isFinite(x) ? Math.round(x * 10) / 10 : null);
