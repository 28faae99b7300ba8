import type { RedisKeys } from './redis-keys.js';

/**
 * Runs `script` once per shard the items fall in (per `maxPerCall` items of a shard), all calls
 * sent at once (pipelined on each node's connection), and puts the per-item answers back in
 * input order. An item listed twice is answered in input order: its shard's calls go out in
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
  items.forEach((item, i) => {
    const shard = keys.shardOf(resource(item));
    const group = groups.get(shard);
    if (group) group.push(i);
    else groups.set(shard, [i]);
  });
  const calls = [...groups].flatMap(([shard, indexes]) =>
    Array.from({ length: Math.ceil(indexes.length / maxPerCall) }, (_, k) => ({
      shard,
      indexes: indexes.slice(k * maxPerCall, (k + 1) * maxPerCall),
    })),
  );
  const out = new Array<R>(items.length);
  await Promise.all(
    calls.map(async ({ shard, indexes }) => {
      const replies = await script(
        indexes.map((i) => items[i]!),
        shard,
      );
      indexes.forEach((itemIndex, k) => (out[itemIndex] = replies[k]!));
    }),
  );
  return out;
}
