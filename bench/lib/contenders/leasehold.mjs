// leasehold as a transition contender: `tryAcquire` → `release` of the worker's own key through a
// store opened from a URL with default options, the way users open it.

/** One contender per build in `libs` (`[{ name, lib }]`), each in its own namespace. */
export function leaseholdContenders(libs, url, ttlMs) {
  return libs.map(({ name, lib }) => ({
    name,
    role: 'leasehold',
    open: async () => {
      const store = await lib.openStore(url(`tr_${name}`));
      return {
        cycle: async (w) => {
          const lease = await store.tryAcquire(`job/${w}`, `o${w}`, ttlMs);
          if (!lease) throw new Error(`${name}: acquire of job/${w} refused`);
          if (!(await store.release(lease))) throw new Error(`${name}: release refused`);
        },
        close: () => store.close(),
      };
    },
  }));
}
