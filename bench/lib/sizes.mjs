// How many leases each section holds, per store, in full and quick runs, and why a size is left
// out. dynalite serves a few hundred conditional updates a second here, so 100,000 on it would
// time dynalite for many minutes rather than leasehold.
const FULL = { 'renew-many': [1000, 10_000, 100_000], stop: [1, 100, 10_000] };

const QUICK = {
  'renew-many': {
    sqlite: [1000, 10_000, 100_000],
    redis: [1000, 10_000, 100_000],
    postgres: [1000, 10_000],
    mysql: [1000, 10_000],
    etcd: [1000],
    dynamodb: [1000],
  },
  stop: { etcd: [1, 100, 1000], dynamodb: [1, 100] },
};

const FULL_CAPS = { dynamodb: 10_000 };

/** `{ sizes, skipped }`: the sizes to run, and those left out with the reason. */
export function sizesFor(section, store, quick) {
  const all = FULL[section];
  let sizes = all.filter((n) => n <= (FULL_CAPS[store] ?? Infinity));
  let why =
    'dynalite serves a few hundred updates a second: the run would time dynalite, for minutes';
  if (quick) {
    sizes = QUICK[section][store] ?? all;
    why = '--quick';
  }
  const skipped = all.filter((n) => !sizes.includes(n));
  return { sizes, skipped: skipped.length ? { sizes: skipped, why } : null };
}
