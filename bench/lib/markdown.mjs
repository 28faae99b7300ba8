// latest.md: a summary, then a table per section. Every transition row puts leasehold, the bare
// compare-and-set and each peer side by side with their ratios within a round; each peer gets a
// footnote saying what it does not guarantee.
import { SUPERSCRIPTS, int, ms, num, ratio, table, title } from './markdown-format.mjs';
import { familySections } from './markdown-family.mjs';

/** "Not run: …" for the sizes a section left out, with the reason. */
function skippedText(rows) {
  const lines = rows
    .filter((r) => r.skipped)
    .map((r) => `${title(r.store)} ${r.skipped.map(int).join(', ')} (${r.why})`);
  return lines.length ? `\n\nNot run: ${lines.join('; ')}.` : '';
}

export function toMarkdown(result) {
  const bySection = (name) => result.rows.filter((r) => r.section === name);
  const stores = Object.keys(result.stores);
  const footnotes = new Map(); // peer → { mark, note }
  const mark = (row) => {
    if (!row.note) return '';
    if (!footnotes.has(row.contender))
      footnotes.set(row.contender, { mark: SUPERSCRIPTS[footnotes.size] ?? '*', note: row.note });
    return footnotes.get(row.contender).mark;
  };
  // Marks are handed out in the transition table's order first; the summary shares them, and the
  // renewMany table's peers (Redis's) are among them.
  const sections = {
    transition: bySection('transition').length
      ? transitionSection(bySection('transition'), stores, mark)
      : null,
    renew: bySection('renew-many').length
      ? renewManySection(bySection('renew-many'), stores, mark)
      : null,
  };
  const notes = [...footnotes].map(([peer, f]) => `${f.mark} ${peer}: ${f.note}.`).join('\n');
  const withNotes = (text) => (notes ? `${text}\n\n${notes}` : text);
  const parts = [header(result), withNotes(summarySection(result, stores, mark))];
  if (sections.transition) parts.push(withNotes(sections.transition));
  if (sections.renew) parts.push(sections.renew);
  if (bySection('stop').length) parts.push(stopSection(bySection('stop'), stores));
  if (bySection('failover').length)
    parts.push(failoverSection(bySection('failover'), stores, result.options.quick));
  parts.push(...familySections(result, stores));
  if (bySection('stalls').length) parts.push(stallsSection(bySection('stalls')));
  if (result.errors.length > 0) {
    const lines = result.errors.map((e) => `- ${title(e.store)} ${e.section}: ${e.error}`);
    parts.push(`## Errors\n\n${lines.join('\n')}`);
  }
  return `${parts.join('\n\n')}\n`;
}

function header(result) {
  const m = result.machine;
  const lib = result.library;
  const run = `node bench/run.mjs${result.options.quick ? ' --quick' : ''}`;
  const servers = Object.entries(result.stores).map(
    ([store, f]) =>
      `- ${title(store)}: ${f.server ?? '?'}${f.settings ? ` (${f.settings})` : ''}; ${f.driver}`,
  );
  const peers = ['redlock', 'redis-semaphore', 'etcd3', 'dynamodb-lock-client']
    .map((p) => `${p} ${lib.packages[p] ?? '?'}`)
    .join(', ');
  return [
    '# leasehold benchmarks',
    '',
    `${result.startedAt.slice(0, 16).replace('T', ' ')} UTC, \`${run}\`, ${result.durationS} s. ` +
      `${m.cpus} × ${m.cpuModel}, ${m.memoryMB} MB, load average ${m.loadavg.join(' ')} at the ` +
      `start and ${(m.loadavgEnd ?? []).join(' ')} at the end; Node ${m.node}. leasehold ` +
      `${lib.version} (${lib.commit ?? 'no commit'}${lib.srcModified ? ', src modified' : ''}); ` +
      `peers ${peers}. Every server is private to the run, on 127.0.0.1. Absolute numbers move ` +
      'with the machine’s load; the ratios, taken within a round, are what to compare.',
    '',
    ...servers,
  ].join('\n');
}

function summarySection(result, stores, mark) {
  const rows = result.rows.filter((r) => !r.skipped);
  const find = (section, pred) => rows.filter((r) => r.section === section && pred(r));
  const body = stores.map((store) => {
    const here = (section) => find(section, (r) => r.store === store);
    const t = (inFlight, contender) =>
      here('transition').find((r) => r.inFlight === inFlight && r.contender === contender);
    const peers = here('transition')
      .filter((r) => r.role === 'peer' && r.inFlight === 1)
      .map((p) => {
        const at32 = t(32, p.contender);
        return `${p.contender}${mark(p)} ${num(p.vsBare?.median, 2)} / ${num(at32?.vsBare?.median, 2)}`;
      });
    const renew = here('renew-many')
      .filter((r) => r.contender === 'leasehold' && r.leases <= 10_000)
      .at(-1);
    const stop = here('stop').at(-1);
    const fo = here('failover')[0];
    const sized = (value, size) => `${ms(value)}${size === 10_000 ? '' : ` (${int(size)})`}`;
    return [
      title(store),
      ratio(t(1, 'leasehold')?.vsBare),
      ratio(t(32, 'leasehold')?.vsBare),
      peers.join(', ') || '—',
      renew ? sized(renew.wallMs, renew.leases) : '—',
      stop ? sized(stop.managerStopMs, stop.leases) : '—',
      fo ? `${ms(fo.killToHeldMs?.p50)} / ${ms(fo.releaseToHeldMs?.p50)}` : '—',
    ];
  });
  return [
    '## Summary',
    '',
    'leasehold’s acquire → release cycles per second as a ratio to the bare compare-and-set of ' +
      'the same shape (with a fencing token, one round trip per transition) within the same ' +
      'round: median (min–max) over rounds; the peers’ medians on the same scale; one ' +
      '`renewMany` of 10,000 held leases; `LeaseManager.stop()` holding 10,000 (fewer where the ' +
      'size is given); and the median time until a waiting process holds the lease after the ' +
      'holder is SIGKILLed / releases it (TTL 2 s).',
    '',
    table(
      [
        'store',
        '× bare CAS, 1 in flight',
        '× bare CAS, 32 in flight',
        'peers × bare CAS (1 / 32 in flight)',
        'renewMany 10k',
        'manager.stop() 10k',
        'failover: SIGKILL / release',
      ],
      body,
    ),
  ].join('\n');
}

function transitionSection(rows, stores, mark) {
  const body = [];
  const bare = new Map();
  const baseline = rows.some((r) => r.contender === 'baseline');
  for (const store of stores) {
    for (const inFlight of [...new Set(rows.map((r) => r.inFlight))]) {
      const here = rows.filter((r) => r.store === store && r.inFlight === inFlight);
      if (here.length === 0) continue;
      const get = (name) => here.find((r) => r.contender === name);
      const b = here.find((r) => r.role === 'bare');
      if (b?.describe) bare.set(store, b.describe);
      const lh = get('leasehold');
      const peers = here
        .filter((r) => r.role === 'peer')
        .map(
          (p) =>
            `${p.contender}${mark(p)} ${int(p.rate?.median)}/s, × bare ${ratio(p.vsBare)}, ` +
            `leasehold ÷ it ${num(p.vsLeasehold ? 1 / p.vsLeasehold.median : null, 2)}`,
        );
      body.push([
        title(store),
        inFlight,
        int(lh?.rate?.median),
        int(b?.rate?.median),
        ratio(lh?.vsBare),
        ...(baseline ? [ratio(get('baseline')?.vsBare)] : []),
        peers.join('; ') || '—',
      ]);
    }
  }
  const one = rows.find((r) => r.inFlight === 1)?.how;
  const many = rows.find((r) => r.inFlight !== 1);
  const slices = [...new Set(rows.filter((r) => r.inFlight !== 1).map((r) => r.how.slices))];
  const sliceText = `${Math.min(...slices)}${slices.length > 1 ? `–${Math.max(...slices)}` : ''}`;
  const how = [
    one &&
      `1 in flight: ${one.rounds} rounds in which the contenders take turns cycle by cycle (the ` +
        'same number of cycles each), rate at each one’s median cycle',
    many &&
      `${many.inFlight} in flight: ${many.how.rounds} rounds of ${many.how.secondsPerRound} s ` +
        `per contender in ${sliceText} slices (fewer on a store where one batch of cycles is ` +
        'slow), in an order shuffled every slice',
  ].filter(Boolean);
  return [
    '## Transition: acquire → release on one key per worker',
    '',
    'Cycles per second (median over rounds) and, within each round, the ratio to the bare ' +
      'compare-and-set on the same server: median (min–max) over rounds. “leasehold ÷ it” is ' +
      'leasehold’s rate over the peer’s in the same rounds (above 1: leasehold ran faster). ' +
      `${how.join('; ')}. TTL 20 s; each contender opens its own connection or pool.`,
    '',
    table(
      [
        'store',
        'in flight',
        'leasehold /s',
        'bare CAS /s',
        'leasehold × bare',
        ...(baseline ? ['baseline × bare'] : []),
        'peers',
      ],
      body,
    ),
    '',
    'The bare compare-and-set, per store:',
    '',
    ...[...bare].map(([store, text]) => `- ${title(store)}: ${text}`),
    '',
    'Peers: redis-semaphore and redlock on Redis, etcd3’s Lock and Election on etcd, ' +
      'dynamodb-lock-client on DynamoDB (with the aws-sdk v2 DocumentClient it is written for); ' +
      'none on the other stores.',
  ].join('\n');
}

function renewManySection(rows, stores, mark) {
  const sizes = [...new Set(rows.filter((r) => r.leases).map((r) => r.leases))].sort(
    (a, b) => a - b,
  );
  const body = [];
  for (const store of stores)
    for (const size of sizes) {
      const at = rows.filter((r) => r.store === store && r.leases === size);
      const lh = at.find((r) => r.contender === 'leasehold');
      if (!lh) continue;
      const peers = at
        .filter((r) => r.role === 'peer')
        .map(
          (p) =>
            `${p.contender}${mark(p)} ${ms(p.wallMs)} = ${num(p.wallMs / lh.wallMs, 1)}× ` +
            `leasehold’s (cpu ${ms(p.cpuMs)}), release ${ms(p.releaseManyMs)}`,
        );
      body.push([
        title(store),
        int(size),
        ms(lh.wallMs),
        ms(lh.cpuMs),
        `${num(lh.rssMB, 0)} (+${num(Math.max(0, lh.rssGrowthMB), 0)})`,
        ms(lh.stallMs),
        ms(lh.releaseManyMs),
        peers.join('; ') || '—',
      ]);
    }
  const header = ['store', 'leases', 'renewMany', 'CPU', 'RSS MB (+growth)', 'longest stall'];
  return [
    '## renewMany: one call renewing every held lease',
    '',
    'Wall and CPU time of this process for one `store.renewMany(leases)`, its RSS after the call ' +
      '(and how much the call grew it), the longest event-loop stall meanwhile, and `releaseMany` ' +
      'of the same leases. The peers have no batch call: they renew (and release) each lock with ' +
      'its own command, all in flight at once.',
    '',
    table([...header, 'releaseMany', 'peers, one call per lock'], body) + skippedText(rows),
  ].join('\n');
}

function stopSection(rows, stores) {
  const body = stores.flatMap((store) =>
    rows
      .filter((r) => r.store === store && !r.skipped)
      .map((r) => [
        title(store),
        int(r.leases),
        ms(r.clientCloseMs),
        ms(r.managerStopMs),
        r.heapBytesPerLease === null ? '' : `${int(r.heapBytesPerLease)} B`,
      ]),
  );
  return [
    '## Graceful stop with many leases held',
    '',
    '`LeaseClient.close()` and `LeaseManager.stop()` (abort each lease’s work, wait for it, one ' +
      '`releaseMany`), and the client’s heap per held lease at the largest size.',
    '',
    table(['store', 'held', 'client.close()', 'manager.stop()', 'heap per lease'], body) +
      skippedText(rows),
  ].join('\n');
}

function failoverSection(rows, stores, quick) {
  const missing = stores.filter((store) => !rows.some((r) => r.store === store));
  const cell = (l, ttl) =>
    l
      ? `${ms(l.p50)} / ${ms(l.p99)} (n ${l.n})${ttl ? `, p50 ÷ TTL ${num(l.p50 / ttl, 2)}` : ''}`
      : '—';
  const body = stores
    .map((store) => rows.find((r) => r.store === store))
    .filter(Boolean)
    .map((r) => [
      title(r.store),
      `${r.ttlMs / 1000} s`,
      `${r.heartbeatMs} ms`,
      cell(r.killToHeldMs, r.ttlMs),
      cell(r.releaseToHeldMs),
    ]);
  const notRun = missing.length
    ? `\n\nNot run: ${missing.map(title).join(', ')}${quick ? ' (--quick runs SQLite, Redis and PostgreSQL)' : ''}.`
    : '';
  return [
    '## Failover between processes',
    '',
    'Two `LeaseClient`s in separate processes; the waiter waits with `client.acquire()` (backoff ' +
      'up to TTL / 4 between attempts). After a SIGKILL the lease must lapse first (about the ' +
      'TTL, less the time since the last renewal, plus the clock-skew allowance); after a ' +
      'graceful `release()` the waiter holds it at its next attempt. p50 / p99.',
    '',
    table(['store', 'TTL', 'heartbeat', 'SIGKILL → waiter holds', 'release → waiter holds'], body) +
      notRun,
  ].join('\n');
}

function stallsSection(rows) {
  const body = rows.map((r) => [
    r.scenario,
    `${ms(r.stallMinMs)} / ${ms(r.stallMedianMs)} / ${ms(r.stallMaxMs)}`,
    ms(r.callMedianMs),
    r.runs,
  ]);
  return [
    '## SQLite: longest event-loop stall',
    '',
    'The longest gap between runs of a 1 ms interval while the call ran (min / median / max over ' +
      'rounds; the minimum is what the call itself costs).',
    '',
    table(['scenario', 'longest stall', 'call (median)', 'rounds'], body),
  ].join('\n');
}
