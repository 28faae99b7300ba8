// Wraps a store so every call the fleet makes is counted by method: the benchmark's measure of
// how hard a fleet leans on its store (heartbeats vs scans). Counts are cumulative; the
// coordinator diffs two snapshots.
export const COUNTED = [
  'tryAcquire',
  'acquireMany',
  'renewMany',
  'releaseMany',
  'renew',
  'release',
  'list',
  'get',
];

export function countingStore(store) {
  const calls = Object.fromEntries(COUNTED.map((m) => [m, 0]));
  const errors = Object.fromEntries(COUNTED.map((m) => [m, 0]));
  const items = { listRecords: 0, acquireManyItems: 0, renewManyItems: 0, releaseManyItems: 0 };
  const counted = new Set(COUNTED);

  const wrap = (name, fn) =>
    async function (...args) {
      calls[name]++;
      if (name.endsWith('Many')) items[`${name}Items`] += args[0]?.length ?? 0;
      try {
        const result = await fn.apply(store, args);
        if (name === 'list') items.listRecords += result.length;
        return result;
      } catch (error) {
        errors[name]++;
        throw error;
      }
    };

  const proxy = new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      // Bound to the real store, so a store method calling another is not counted twice.
      return counted.has(key) ? wrap(key, value) : value.bind(target);
    },
  });
  return {
    store: proxy,
    snapshot: () => ({ calls: { ...calls }, errors: { ...errors }, items: { ...items } }),
  };
}
