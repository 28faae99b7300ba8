/**
 * Runs calls with the same key one after another, in the order they were made; calls with
 * different keys run at once. For a store whose writes are compare-and-sets on a revision: its own
 * concurrent writes of one record then do not make each other fail and retry.
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<void>>();

  /** Calls `fn` once every call queued before it under `key` has settled; answers what `fn` does. */
  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key);
    const result = before ? before.then(fn) : fn();
    const tail = result.then(
      () => {},
      () => {},
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
