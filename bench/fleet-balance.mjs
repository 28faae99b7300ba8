// Load-aware shares: 8 LeaseManagers over 10,000 resources whose costs follow Zipf(1.0), in
// virtual time (the real manager code on the memory store and one manual clock, every worker in
// this process), so the figures measure the balancing design, not the machine. Three runs:
//   cold    — the weights given from the start (`weight`): balance after the cold start, moves;
//   learned — a fleet balanced by count learns the weights (the `weight` function changes): moves
//             against the fewest that reach the band, and scans until the fleet is inside it;
//   cooled  — the ten hottest resources' holders report a tenth of their load (`reportLoad`):
//             scans until the fleet is balanced again, and moves.
// "max/mean" is the most loaded worker's load over the mean (true weights, per unit of capacity).
// Usage: npm run build && node bench/fleet-balance.mjs [--workers N] [--resources N] [--out FILE]
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_DIST, loadLibrary } from './lib/library.mjs';

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '8' },
    resources: { type: 'string', default: '10000' },
    tolerance: { type: 'string', default: '0.1' },
    out: { type: 'string' },
    dist: { type: 'string' },
  },
});
const WORKERS = Number(values.workers);
const RESOURCES = Number(values.resources);
const TOLERANCE = Number(values.tolerance);
const TTL = 10_000;
const HEARTBEAT = 2_000;
const RECONCILE = 5_000;
const { LeaseManager, MemoryStore } = await loadLibrary(values.dist);
const { ManualClock } = await import(
  pathToFileURL(resolve(values.dist ?? DEFAULT_DIST, 'testing/index.js')).href
);

const names = Array.from({ length: RESOURCES }, (_, i) => `shard/${String(i).padStart(6, '0')}`);
// Zipf(1.0) costs over a random permutation of the names, scaled so the mean weight is 1.
const harmonic = names.reduce((sum, _, k) => sum + 1 / (k + 1), 0);
const order = shuffled(
  names.map((_, i) => i),
  42,
);
const zipf = new Map(order.map((i, k) => [names[i], RESOURCES / (harmonic * (k + 1))]));
const hottest = order.slice(0, 10).map((i) => names[i]);

function shuffled(list, seed) {
  let s = seed;
  const random = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [list[i], list[j]] = [list[j], list[i]];
  }
  return list;
}

/** A fleet of managers on one memory store and one manual clock. */
async function fleet(weight) {
  const clock = new ManualClock();
  const store = new MemoryStore({ clock });
  const managers = [];
  let moves = 0;
  for (let i = 0; i < WORKERS; i++) {
    const manager = new LeaseManager({
      store,
      owner: `w${i}`,
      clock,
      resources: names,
      ttlMs: TTL,
      heartbeatMs: HEARTBEAT,
      reconcileMs: RECONCILE,
      settleMs: 0,
      weight,
      balanceTolerance: TOLERANCE,
    });
    manager.on('handoff', () => moves++);
    managers.push(manager);
  }
  await Promise.all(managers.map((m) => m.start()));
  return { clock, store, managers, moves: () => moves };
}

/** Each worker's true load (what the bench says each resource costs now). */
function loads(managers, cost) {
  return managers.map((m) => m.held().reduce((sum, lease) => sum + cost(lease.resource), 0));
}

function standing(managers, cost) {
  const all = loads(managers, cost);
  const mean = all.reduce((a, b) => a + b, 0) / all.length;
  const held = new Set(managers.flatMap((m) => m.held().map((l) => l.resource)));
  return {
    maxOverMean: Math.max(...all) / mean,
    minOverMean: Math.min(...all) / mean,
    held: held.size,
  };
}

/**
 * A lower bound on the moves that bring every worker to at most (1 + tolerance) × the mean load:
 * - each worker over the bound gives up at least the fewest of its resources (heaviest first)
 *   that bring it under;
 * - and whichever worker ends up holding the heaviest resource must be left with at most
 *   bound − its weight of the others: at least the fewest of its others that get it there, plus
 *   the move of the heaviest itself if it did not hold it, while every other worker still gives up
 *   its own excess (the heaviest not counted).
 * - each worker under (1 − tolerance) × the mean receives at least the fewest resources of the
 *   others (heaviest first, each still fitting under its bound) that bring it up to it.
 * The largest of the three: a move may serve a worker over the bound and one under it at once.
 */
function fewestMoves(managers, cost) {
  const held = managers.map((m) => m.held().map((l) => l.resource));
  const all = held.map((list) => list.reduce((sum, r) => sum + cost(r), 0));
  const bound = ((1 + TOLERANCE) * all.reduce((a, b) => a + b, 0)) / all.length;
  /** The fewest of `weights` (heaviest first) whose removal brings `load` to at most `limit`. */
  const giveUps = (weights, load, limit) => {
    let n = 0;
    for (const w of [...weights].sort((a, b) => b - a)) {
      if (load <= limit) break;
      load -= w;
      n++;
    }
    return load <= limit ? n : Infinity;
  };
  const simple = held.reduce((n, list, i) => n + giveUps(list.map(cost), all[i], bound), 0);
  const heaviest = held.flat().reduce((a, r) => (cost(r) > cost(a) ? r : a));
  const others = held.map((list) => list.filter((r) => r !== heaviest).map(cost));
  const excess = others.map((ws) =>
    giveUps(
      ws,
      ws.reduce((a, b) => a + b, 0),
      bound,
    ),
  );
  const totalExcess = excess.reduce((a, b) => a + b, 0);
  let hosted = Infinity;
  others.forEach((ws, i) => {
    const own = giveUps(
      ws,
      ws.reduce((a, b) => a + b, 0),
      bound - cost(heaviest),
    );
    const moveIn = held[i].includes(heaviest) ? 0 : 1;
    hosted = Math.min(hosted, own + moveIn + totalExcess - excess[i]);
  });
  const floor = ((1 - TOLERANCE) * all.reduce((a, b) => a + b, 0)) / all.length;
  let fills = 0;
  held.forEach((list, i) => {
    if (all[i] >= floor) return;
    const offered = held
      .filter((_, j) => j !== i)
      .flat()
      .map(cost)
      .sort((a, b) => b - a);
    let load = all[i];
    for (const w of offered) {
      if (load >= floor) break;
      if (load + w > bound) continue;
      load += w;
      fills++;
    }
  });
  return Math.max(simple, hosted, fills);
}

/**
 * Advances a scan at a time until every worker is inside (1 ± tolerance) × the mean load and every
 * resource held (or `maxScans`).
 */
async function untilBalanced(f, cost, maxScans = 12) {
  for (let tick = 1; tick <= maxScans * 10; tick++) {
    await f.clock.advance(RECONCILE / 10);
    const s = standing(f.managers, cost);
    const inBand = s.maxOverMean <= 1 + TOLERANCE && s.minOverMean >= 1 - TOLERANCE;
    if (s.held === RESOURCES && inBand)
      return { scans: (tick * (RECONCILE / 10)) / RECONCILE, ...s };
  }
  return { scans: null, ...standing(f.managers, cost) };
}

async function settleFor(f, scans) {
  for (let i = 0; i < scans * 10; i++) await f.clock.advance(RECONCILE / 10);
}

const zipfCost = (r) => zipf.get(r);
const result = {
  startedAt: new Date().toISOString(),
  workers: WORKERS,
  resources: RESOURCES,
  tolerance: TOLERANCE,
  ttlMs: TTL,
  heartbeatMs: HEARTBEAT,
  reconcileMs: RECONCILE,
  weights: 'Zipf(1.0), mean 1, over a seeded permutation of the names',
  runs: {},
};

{
  const cpu = process.cpuUsage();
  const f = await fleet((r) => zipf.get(r));
  const reached = await untilBalanced(f, zipfCost);
  await settleFor(f, 4);
  result.runs.cold = {
    ...reached,
    after4MoreScans: standing(f.managers, zipfCost),
    moves: f.moves(),
    cpuSeconds: cpuSeconds(cpu),
  };
  await Promise.all(f.managers.map((m) => m.stop({ timeoutMs: 100 })));
}

{
  let weighed = false;
  const f = await fleet((r) => (weighed ? zipf.get(r) : 1));
  await settleFor(f, 4);
  const before = standing(f.managers, zipfCost);
  const fewest = fewestMoves(f.managers, zipfCost);
  const movesBefore = f.moves();
  weighed = true;
  const reached = await untilBalanced(f, zipfCost);
  const movesToBalance = f.moves() - movesBefore;
  await settleFor(f, 4);
  result.runs.learned = {
    countBalanced: before,
    fewestMoves: fewest,
    moves: movesToBalance,
    movesOverFewest: fewest === 0 ? null : movesToBalance / fewest,
    ...reached,
    after4MoreScans: standing(f.managers, zipfCost),
    movesAfter4MoreScans: f.moves() - movesBefore - movesToBalance,
  };

  // The ten hottest cool to a tenth: their holders report it.
  const cooled = new Map(hottest.map((r) => [r, zipf.get(r) / 10]));
  const cooledCost = (r) => cooled.get(r) ?? zipf.get(r);
  const movesAt = f.moves();
  for (const m of f.managers)
    for (const lease of m.held())
      if (cooled.has(lease.resource)) m.reportLoad(lease.resource, cooled.get(lease.resource));
  const afterChange = standing(f.managers, cooledCost);
  const fewestCooled = fewestMoves(f.managers, cooledCost);
  const rebalanced = await untilBalanced(f, cooledCost);
  const cooledMoves = f.moves() - movesAt;
  await settleFor(f, 4);
  result.runs.cooled = {
    change: 'the ten hottest resources report a tenth of their load',
    afterChange,
    fewestMoves: fewestCooled,
    moves: cooledMoves,
    ...rebalanced,
    after4MoreScans: standing(f.managers, cooledCost),
    movesAfter4MoreScans: f.moves() - movesAt - cooledMoves,
  };

  // A ninth worker joins the weighed fleet.
  const newcomer = new LeaseManager({
    store: f.store,
    owner: `w${WORKERS}`,
    clock: f.clock,
    resources: names,
    ttlMs: TTL,
    heartbeatMs: HEARTBEAT,
    reconcileMs: RECONCILE,
    settleMs: 0,
    weight: (r) => (weighed ? zipf.get(r) : 1),
    balanceTolerance: TOLERANCE,
  });
  let joinMoves = 0;
  for (const m of f.managers) m.on('handoff', () => joinMoves++);
  newcomer.on('handoff', () => joinMoves++);
  f.managers.push(newcomer);
  const fewestJoin = fewestMoves(f.managers, cooledCost);
  await newcomer.start();
  const joined = await untilBalanced(f, cooledCost);
  const movesToJoin = joinMoves;
  await settleFor(f, 4);
  result.runs.join = {
    change: `a worker joins the ${WORKERS}`,
    fewestMoves: fewestJoin,
    moves: movesToJoin,
    ...joined,
    after4MoreScans: standing(f.managers, cooledCost),
    movesAfter4MoreScans: joinMoves - movesToJoin,
    newcomerLoadOverMean:
      loads(f.managers, cooledCost).at(-1) /
      (loads(f.managers, cooledCost).reduce((a, b) => a + b, 0) / f.managers.length),
  };
  await Promise.all(f.managers.map((m) => m.stop({ timeoutMs: 100 })));
}

function cpuSeconds(start) {
  const used = process.cpuUsage(start);
  return Number(((used.user + used.system) / 1e6).toFixed(2));
}

result.finishedAt = new Date().toISOString();
console.log(JSON.stringify(result, null, 2));
if (values.out) writeFileSync(values.out, JSON.stringify(result, null, 2) + '\n');
