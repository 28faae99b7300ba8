/**
 * Runs `call` for every item with at most `concurrency` calls in flight and answers in input
 * order. Items with the same key run one after another, in input order, so a lease listed twice
 * is answered as if the calls had been made one by one. After a failure no new call starts; the
 * first error is thrown once the calls in flight have settled.
 */
export async function runInOrder<T, R>(
  items: readonly T[],
  keyOf: (item: T) => string,
  concurrency: number,
  call: (item: T) => Promise<R>,
): Promise<R[]> {
  const groups = new Map<string, number[]>();
  items.forEach((item, i) => {
    const group = groups.get(keyOf(item));
    if (group) group.push(i);
    else groups.set(keyOf(item), [i]);
  });
  const queue = [...groups.values()];
  const out = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < queue.length) {
      for (const i of queue[next++]!) {
        if (failure !== undefined) return;
        try {
          out[i] = await call(items[i]!);
        } catch (error) {
          failure ??= { error };
          return;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, worker));
  if (failure !== undefined) throw failure.error;
  return out;
}
