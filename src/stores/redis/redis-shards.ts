import type { RedisKeys } from './redis-keys.js';

/**
 * Runs `script` once per shard the items fall in (per `maxPerCall` items of a shard), building at
 * most `maxPerCall` items' worth of calls per turn of the event loop and sending each without
 * waiting for the answers of the others (pipelined on each node's connection), and puts the
 * per-item answers back in input order. An item listed twice is answered in input order: its shard's calls go out in
 * order on one connection. On a single shard, a batch that fits one call is sent as it is.
 */
export async function perShard<T, R>(
  keys: RedisKeys,
  items: readonly T[],
  resource: (item: T) => string,
  maxPerCall: number,
  script: (group: readonly T[], shard: number) => Promise<R[]>,
): Promise<R[]> {
  if (keys.shards === 1 && items.length <= maxPerCall) return script(items, 0);
  const groups = new Map<number, number[]>();
  if (keys.shards === 1) {
    groups.set(
      0,
      Array.from({ length: items.length }, (_, i) => i),
    );
  } else {
    items.forEach((item, i) => {
      const shard = keys.shardOf(resource(item));
      const group = groups.get(shard);
      if (group) group.push(i);
      else groups.set(shard, [i]);
    });
  }
  const calls = [...groups].flatMap(([shard, indexes]) =>
    Array.from({ length: Math.ceil(indexes.length / maxPerCall) }, (_, k) => ({
      shard,
      indexes: indexes.slice(k * maxPerCall, (k + 1) * maxPerCall),
    })),
  );
  const out = new Array<R>(items.length);
  const sent: Promise<void>[] = [];
  let built = 0;
  for (const { shard, indexes } of calls) {
    // At most `maxPerCall` items built per turn of the event loop: timers run in between (design
    // rule 6), while the small calls of a batch spread over shards still go out together.
    if (built + indexes.length > maxPerCall && built > 0) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      built = 0;
    }
    built += indexes.length;
    const call = script(
      indexes.map((i) => items[i]!),
      shard,
    ).then((replies) => indexes.forEach((itemIndex, k) => (out[itemIndex] = replies[k]!)));
    call.catch(() => undefined); // reported by Promise.all below, not as unhandled meanwhile
    sent.push(call);
  }
  await Promise.all(sent);
  return out;
}

/** The record keys of `resources`, then the index key of each one's shard, in the same order. */
export function recordsAndIndexes(keys: RedisKeys, resources: readonly string[]): string[] {
  const out = new Array<string>(2 * resources.length);
  resources.forEach((resource, i) => {
    const shard = keys.shardOf(resource);
    out[i] = keys.recordPrefix(shard) + resource;
    out[resources.length + i] = keys.index(shard);
  });
  return out;
}

/** `resources` split by shard, each in input order, the shards in the order of their first resource. */
export function byShard(keys: RedisKeys, resources: readonly string[]): string[][] {
  const groups = new Map<number, string[]>();
  for (const resource of resources) {
    const shard = keys.shardOf(resource);
    const group = groups.get(shard);
    if (group) group.push(resource);
    else groups.set(shard, [resource]);
  }
  return [...groups.values()];
}
