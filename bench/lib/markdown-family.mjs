// latest.md's tables for the lease family: counting leases beside the exclusive lease (and
// redis-semaphore on Redis), all-or-nothing groups by size, and fair against non-fair waiting on
// one hot lease. Each says what its requests column counts on each store.
import { SEMAPHORE_NOTE } from './contenders/permits.mjs';
import { int, ms, num, ratio, table, title } from './markdown-format.mjs';

/** The sections that have rows, in run order. */
export function familySections(result, stores) {
  const rows = (section) => result.rows.filter((r) => r.section === section);
  return [
    rows('permits').length ? permitsSection(rows('permits'), stores) : null,
    rows('groups').length ? groupsSection(rows('groups'), stores) : null,
    rows('fair').length ? fairSection(rows('fair'), stores) : null,
    rows('data').length ? dataSection(rows('data'), stores) : null,
  ].filter(Boolean);
}

const STALL_CALLS = [
  'acquireMany granted',
  'acquireMany refused',
  'list',
  'renewMany',
  'releaseMany',
];

function dataSection(rows, stores) {
  const calls = [];
  const many = [];
  const stalls = [];
  for (const store of stores)
    for (const r of rows.filter((x) => x.store === store)) {
      if (r.failed) calls.push([title(store), `failed: ${r.failed}`, '—', '—', '—']);
      else if (r.kind === 'call')
        calls.push([
          title(store),
          r.call,
          int(r.rate?.median),
          pair(r.latencyMs),
          count(r.roundTripsPerCall, 1),
        ]);
      else if (r.kind === 'batch-stalls')
        stalls.push([
          title(store),
          int(r.leases),
          ...STALL_CALLS.map((call) => ms(r.stallMinMs?.[call])),
        ]);
      else
        many.push([title(store), int(r.leases), ms(r.plainMs), ms(r.withDataMs), num(r.ratio, 2)]);
    }
  return [
    '## Lease data',
    '',
    'One call in flight on one held lease, in rotating rounds: `writeData` of 100 bytes and of the limit beside a plain `renew()`, and on PostgreSQL the same 100 bytes through a `PostgresFence` to a table of its own. Then `renewMany` of held leases carrying 100 bytes each beside as many without (renewals never rewrite the data).',
    '',
    table(['store', 'call', 'calls/s', 'p50 / p99', 'requests / call'], calls),
    '',
    table(['store', 'leases', 'renewMany without data', 'with 100 B each', 'ratio'], many),
    '',
    'The longest event-loop stall (the best of the rounds) while batches of leases carrying the data limit each go through the store: what holds a lease’s deadline timer back (design rule 6).',
    '',
    table(['store', 'leases', ...STALL_CALLS], stalls),
    '',
    units(
      rows.filter((r) => r.kind === 'call'),
      stores,
    ),
  ].join('\n');
}

const pair = (l) => (l ? `${ms(l.p50)} / ${ms(l.p99)}` : '—');
const count = (x, digits = 1) => (x === null || x === undefined ? '—' : num(x, digits));

function units(rows, stores) {
  const seen = stores
    .map((store) => rows.find((r) => r.store === store && r.roundTripUnit))
    .filter(Boolean)
    .map((r) => `${title(r.store)}: ${r.roundTripUnit}`);
  return `Requests, per store: ${seen.join('; ')}.`;
}

function permitsSection(rows, stores) {
  const body = [];
  for (const store of stores)
    for (const r of rows.filter((x) => x.store === store)) {
      if (r.failed) {
        body.push([
          title(store),
          r.inFlight,
          'every contender',
          '—',
          '—',
          '—',
          '—',
          `failed: ${r.failed}`,
        ]);
        continue;
      }
      const vs = [
        r.vsPeer && `leasehold ÷ redis-semaphore ${ratio(r.vsPeer)}`,
        r.vsExclusive && `÷ exclusive ${ratio(r.vsExclusive)}`,
      ].filter(Boolean);
      body.push([
        title(store),
        r.inFlight,
        r.contender,
        int(r.rate?.median),
        pair(r.latencyMs),
        count(r.storeCallsPerCycle, 2),
        count(r.roundTripsPerCycle, 2),
        vs.join('; ') || '—',
      ]);
    }
  const noPeer = stores.filter(
    (store) =>
      rows.some((r) => r.store === store) &&
      !rows.some((r) => r.store === store && r.role === 'peer'),
  );
  const how = rows.find((r) => r.inFlight === 1 && r.how)?.how;
  const many = rows.find((r) => r.inFlight !== 1 && r.how)?.how;
  return [
    '## Permits: acquire → release of one of 5 permits of one name',
    '',
    'Every worker cycles `client.acquire(name, { permits: 5 })` → `release()` on the one name ' +
      '(at 32 in flight most of them wait), beside leasehold’s exclusive lease ' +
      '(`tryAcquire` → `release()` of each worker’s own name, never contended) and, on Redis, ' +
      'redis-semaphore’s `Semaphore` with limit 5 on one ioredis connection. Each worker has its ' +
      'own LeaseClient on its contender’s one store. Cycles per second (median over rounds), each ' +
      'cycle’s time p50 / p99 over all rounds, and ratios within a round: median (min–max). ' +
      (how ? `1 in flight: ${how.rounds} rounds, turn by turn; ` : '') +
      (many
        ? `32 in flight: ${many.rounds} rounds of ${many.secondsPerRound} s in shuffled slices. `
        : '') +
      'Store calls (leasehold’s, counted at the store interface) and requests per cycle come from ' +
      'a pass of each contender alone. TTL 20 s.',
    '',
    table(
      [
        'store',
        'in flight',
        'contender',
        'cycles/s',
        'cycle p50 / p99',
        'store calls / cycle',
        'requests / cycle',
        'ratio of rates',
      ],
      body,
    ),
    '',
    `redis-semaphore: ${SEMAPHORE_NOTE}.` +
      (noPeer.length
        ? ` No semaphore peer runs on ${noPeer.map(title).join(', ')}: there the permits are measured beside the exclusive lease only.`
        : ''),
    '',
    units(rows, stores),
  ].join('\n');
}

function groupsSection(rows, stores) {
  const body = stores.flatMap((store) =>
    rows
      .filter((r) => r.store === store)
      .map((r) => [
        title(store),
        r.size,
        `${num(r.rate?.median, 0)} (${num(r.rate?.min, 0)}–${num(r.rate?.max, 0)})`,
        pair(r.latencyMs),
        count(r.storeCallsPerGroup, 1),
        count(r.roundTripsPerGroup, 1),
        r.how,
      ]),
  );
  const rounds = rows[0]?.rounds;
  return [
    '## Groups: acquireAll of N free resources → release',
    '',
    '`client.acquireAll(names)` → `group.release()`, one group in flight, the same names each ' +
      `time; ${rounds} rounds taking the sizes in a shuffled order. Groups per second: median ` +
      '(min–max) over rounds; each group’s time p50 / p99; store calls (acquireAll and ' +
      'releaseMany, counted at the store interface) and requests per group.',
    '',
    table(
      [
        'store',
        'members',
        'groups/s',
        'group p50 / p99',
        'store calls / group',
        'requests / group',
        'how the store takes it',
      ],
      body,
    ),
    '',
    units(rows, stores),
  ].join('\n');
}

function fairSection(rows, stores) {
  const body = stores.flatMap((store) =>
    rows
      .filter((r) => r.store === store)
      .map((r) => [
        title(store),
        r.mode,
        r.overtakes ? `${r.overtakes.median} (${r.overtakes.min}–${r.overtakes.max})` : '—',
        pair(r.waitMs),
        pair(r.handoffMs),
        count(r.grantsPerS?.median, 0),
        count(r.storeCallsPerGrant?.median, 1),
        count(r.roundTripsPerGrant?.median, 1),
        [r.failed && `failed: ${r.failed}`, r.note].filter(Boolean).join('; '),
      ]),
  );
  const r0 = rows[0];
  return [
    `## Fair waiting: ${r0.waiters} waiters on one hot lease`,
    '',
    `A holder takes the name; ${r0.waiters} waiters (each its own LeaseClient on one store) call ` +
      '`acquire(name)` one after another, each once the last has settled to wait; the holder ' +
      `lets go and each waiter in turn holds the lease ${r0.holdMs} ms and releases it. With ` +
      '`fair: true` and without, in a shuffled order, ' +
      `${r0.rounds} round${r0.rounds > 1 ? 's' : ''}. Overtakes: grants made while a waiter ` +
      'that arrived earlier was still waiting, median (min–max) over rounds; wait: from the ' +
      'call to the grant; handoff: from a release to the next grant; grants per second from the ' +
      'holder’s release; store calls and requests per grant, the line’s own (tickets, places, ' +
      `renewals, reads) included. TTL ${r0.ttlMs / 1000} s, heartbeat ${r0.heartbeatMs} ms.`,
    '',
    table(
      [
        'store',
        'waiting',
        'overtakes',
        'wait p50 / p99',
        'handoff p50 / p99',
        'grants/s',
        'store calls / grant',
        'requests / grant',
        'note',
      ],
      body,
    ),
    '',
    units(rows, stores),
  ].join('\n');
}
