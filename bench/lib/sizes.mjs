// How many leases each section holds, per store, in full and quick runs, and why a size is left
// out. dynalite serves a few hundred conditional updates a second here, radosgw (one memstore
// OSD) about as many PUTs (one per lease), and ZooKeeper a thousand or so leases a second in
// batches: their largest sizes would time the server for many minutes rather than leasehold.
const FULL = { 'renew-many': [1000, 10_000, 100_000], stop: [1, 100, 10_000] };

const QUICK = {
  'renew-many': {
    sqlite: [1000, 10_000, 100_000],
    redis: [1000, 10_000, 100_000],
    postgres: [1000, 10_000],
    mysql: [1000, 10_000],
    etcd: [1000],
    dynamodb: [1000],
    s3: [1000],
    zookeeper: [1000],
  },
  stop: { etcd: [1, 100, 1000], dynamodb: [1, 100], s3: [1, 100], zookeeper: [1, 100, 1000] },
};

const FULL_CAPS = {
  dynamodb: {
    max: 10_000,
    why: 'dynalite serves a few hundred updates a second: the run would time dynalite, for minutes',
  },
  s3: {
    max: 1000,
    why: 'radosgw on one memstore OSD serves a few hundred PUTs a second, one per lease: the run would time radosgw, for minutes',
  },
  zookeeper: {
    max: 10_000,
    why: 'ZooKeeper here takes, renews and releases about a thousand leases a second: 100,000 would take minutes',
  },
};

/** `{ sizes, skipped }`: the sizes to run, and those left out with the reason. */
export function sizesFor(section, store, quick) {
  const all = FULL[section];
  const cap = FULL_CAPS[store];
  let sizes = all.filter((n) => n <= (cap?.max ?? Infinity));
  let why = cap?.why;
  if (quick) {
    sizes = QUICK[section][store] ?? all;
    why = '--quick';
  }
  const skipped = all.filter((n) => !sizes.includes(n));
  return { sizes, skipped: skipped.length ? { sizes: skipped, why } : null };
}
