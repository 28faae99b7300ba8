/** A metrics adapter listening to the diagnostics channels. */
export interface MetricsSubscription {
  /** Stops counting (and, for Prometheus, removes the metrics from the registry). Calling it again does nothing. */
  stop(): void;
  /** `using metrics = …` stops it at the end of the block. */
  [Symbol.dispose](): void;
}

/** A subscription whose `stop` runs `end` once. */
export function subscription(end: () => void): MetricsSubscription {
  let ended = false;
  const stop = (): void => {
    if (ended) return;
    ended = true;
    end();
  };
  return { stop, [Symbol.dispose]: stop };
}
