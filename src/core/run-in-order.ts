/**
 * Runs `call` for every item with at most `concurrency` calls in flight and answers in input
 * order. Items with the same key run one after another, in input order, so a lease listed twice
 * is answered as if the calls had been made one by one. After a failure no new call starts (a
 * paused server fails a batch in one call's deadline, not one per item); the first error is
 * thrown once the calls in flight have settled.
 *
 * For stores whose batches are one conditional write per lease (DynamoDB, S3, NATS KV): a
 * transaction there would fail as a whole when any one condition fails, and "this lease is no
 * longer yours" is an answer per lease.
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
  const lane = async (): Promise<void> => {
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
  await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, lane));
  if (failure !== undefined) throw failure.error;
  return out;
}

/**
 * `run` over consecutive chunks of at most `size` items, one after another, results concatenated
 * in input order: a batch too big for one statement (or one piece of event-loop work) goes as
 * several. Items listed twice across chunks are answered as if the calls had been made one by one.
 */
export async function runInChunks<T, R>(
  items: readonly T[],
  size: number,
  run: (chunk: readonly T[]) => Promise<R[]>,
): Promise<R[]> {
  if (items.length <= size) return run(items);
  const out: R[] = [];
  for (let start = 0; start < items.length; start += size)
    for (const result of await run(items.slice(start, start + size))) out.push(result);
  return out;
}
