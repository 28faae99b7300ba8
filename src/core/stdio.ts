/**
 * Waits (at most `timeoutMs`) until what was written to stdout and stderr has left the process.
 * Writes to a pipe whose reader is behind are queued in the process, not written at once: a
 * process that ends by a signal right after a burst of output loses the queue's tail.
 */
export function flushStdio(timeoutMs = 2000): Promise<void> {
  const pending = [process.stdout, process.stderr].filter(
    (stream) => stream.writableLength > 0 && !stream.destroyed,
  );
  if (pending.length === 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    let left = pending.length;
    const done = (): void => {
      if (--left > 0) return;
      clearTimeout(timer);
      resolve();
    };
    // Written in order: the callback of an empty write runs once everything before it is out.
    for (const stream of pending) stream.write('', done);
  });
}

/**
 * Ends the process by `signal` once stdout and stderr have drained (see `flushStdio`); `failure`,
 * when given, is written to stderr first, so a stop that failed still says why.
 */
export function raiseAfterFlush(signal: NodeJS.Signals, failure?: unknown): Promise<void> {
  if (failure !== undefined)
    process.stderr.write(
      `leasehold: stopping failed: ${failure instanceof Error ? failure.message : String(failure)}\n`,
    );
  return flushStdio().finally(() => process.kill(process.pid, signal));
}
