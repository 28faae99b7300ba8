// Wraps a store so every call the fleet (or a client) makes is counted by method: the benchmark's
// measure of how hard a fleet leans on its store (heartbeats vs scans) and of the store calls a
// permit, a group or a fair grant takes. Counts are cumulative; the caller diffs two snapshots.
export const COUNTED = [
  'tryAcquire',
  'acquireMany',
  'acquireFirst',
  'acquireAll',
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
  let inFlight = 0;

  const wrap = (name, fn) =>
    async function (...args) {
      calls[name]++;
      if (name.endsWith('Many')) items[`${name}Items`] += args[0]?.length ?? 0;
      inFlight++;
      try {
        const result = await fn.apply(store, args);
        if (name === 'list') items.listRecords += result.length;
        return result;
      } catch (error) {
        errors[name]++;
        throw error;
      } finally {
        inFlight--;
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
    /** Counted calls not answered yet. */
    inFlight: () => inFlight,
  };
}

/** Every counted call between two snapshots, all methods together. */
export function callsBetween(before, after) {
  return COUNTED.reduce((sum, m) => sum + after.calls[m] - before.calls[m], 0);
}
