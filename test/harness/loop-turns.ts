/**
 * Runs `work` while a 1 ms interval counts the turns of the event loop in which it ran. A call that
 * waits asynchronously lets it run again and again; one that holds the loop for its whole wait (a
 * synchronous busy handler, say) lets it run once at most. How long the loop was held is a number
 * for the benchmarks (`npm run bench`, section stalls), not an assertion in a test.
 */
export async function loopTurns<T>(work: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  const ticker = setInterval(() => turns++, 1);
  try {
    const result = await work();
    return { result, turns };
  } finally {
    clearInterval(ticker);
  }
}
