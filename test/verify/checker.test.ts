import { describe, expect, it } from 'vitest';
import { Beliefs } from '../../src/cli/harness/beliefs.js';
import { checkRecords, latencies } from '../../src/cli/harness/checker.js';
import {
  historyLine,
  parseHistory,
  type BeliefRecord,
  type HistoryRecord,
  type RunRecord,
  type WriteRecord,
} from '../../src/cli/harness/history-format.js';

const run: RunRecord = {
  type: 'run',
  version: 1,
  clock: 'CLOCK_MONOTONIC',
  clockErrorMs: 0.001,
  store: 'sqlite:x.db',
  storeClock: 'local',
  maxClockSkewMs: 50,
  ttlMs: 1000,
  reconcileMs: 500,
  livenessBoundMs: 2000,
  workers: 2,
  resources: 1,
  faults: ['kill'],
  seed: 1,
  skewMs: 0,
  startedAt: 0,
};

const b = (
  owner: string,
  token: number,
  from: number,
  to: number,
  resource = 'r',
): BeliefRecord => ({
  type: 'belief',
  resource,
  owner,
  token,
  from,
  to,
  how: 'released',
});

const w = (
  owner: string,
  token: number,
  at: number,
  outcome: WriteRecord['outcome'],
  commit?: number,
): WriteRecord => ({
  type: 'write',
  resource: 'r',
  owner,
  token,
  at,
  outcome,
  ...(commit === undefined ? {} : { commit }),
});

const ready = (worker: string, at: number): HistoryRecord => ({
  type: 'worker',
  worker,
  event: 'ready',
  at,
});

/** A clean history: two owners hand over twice, writes in token order, a kill and a stop. */
function clean(): HistoryRecord[] {
  return [
    run,
    ready('A', 0),
    ready('B', 0),
    b('A', 1, 10, 1000),
    w('A', 1, 500, 'accepted', 1),
    { type: 'fault', kind: 'kill', worker: 'A', at: 800 },
    b('B', 2, 1900, 3000),
    w('B', 2, 2000, 'accepted', 2),
    w('A', 1, 2100, 'rejected'),
    { type: 'fault', kind: 'stop', worker: 'B', at: 2950 },
    ready('C', 2900),
    b('C', 3, 3000.5, 4000),
    w('C', 3, 3100, 'accepted', 3),
    { type: 'end', at: 4000 },
  ];
}

describe('leasehold check: the history checker', () => {
  it('passes a clean history and measures takeovers after kill and stop', () => {
    const result = checkRecords(clean());
    expect(result.safe).toBe(true);
    expect(result.overlaps).toEqual([]);
    expect(result.tokenOrder).toEqual([]);
    expect(result.staleAccepted).toEqual([]);
    expect(result.liveness).toEqual([]);
    expect(result.handovers).toBe(2);
    expect(result.writes).toEqual({ accepted: 3, rejected: 1, errors: 0 });
    expect(result.faults).toEqual({ kill: 1, stop: 1 });
    expect(result.takeover.kill).toEqual({ count: 1, p50: 1100, p99: 1100, max: 1100 });
    expect(result.takeover.stop.max).toBeCloseTo(50.5, 6);
  });

  it('finds two owners believing at once, by as little as a microsecond, against any earlier belief', () => {
    const touching = checkRecords([run, b('A', 1, 0, 100), b('B', 2, 100, 200)]);
    expect(touching.overlaps).toEqual([]);
    const tiny = checkRecords([run, b('A', 1, 0, 100.001), b('B', 2, 100, 200)]);
    expect(tiny.safe).toBe(false);
    expect(tiny.overlaps).toHaveLength(1);
    expect(tiny.overlaps[0]!.ms).toBeCloseTo(0.001, 9);
    // C overlaps A (which outlives B), not its neighbour B.
    const nested = checkRecords([run, b('A', 1, 0, 500), b('B', 2, 10, 20), b('C', 3, 30, 40)]);
    expect(nested.overlaps.map((o) => `${o.first.owner}/${o.second.owner}`)).toEqual([
      'A/B',
      'A/C',
    ]);
    // The same owner's consecutive beliefs never count as two owners; other resources do not mix.
    const same = checkRecords([run, b('A', 1, 0, 100), b('A', 2, 50, 200), b('B', 3, 50, 60, 's')]);
    expect(same.overlaps).toEqual([]);
  });

  it('finds a token that does not rise across successive owners', () => {
    const result = checkRecords([run, b('A', 5, 0, 100), b('B', 5, 200, 300), b('C', 4, 400, 500)]);
    expect(result.safe).toBe(false);
    expect(result.overlaps).toEqual([]);
    expect(result.tokenOrder.map((v) => [v.before.token, v.after.token])).toEqual([
      [5, 5],
      [5, 4],
    ]);
  });

  it('finds a fenced write accepted after a higher token, in commit order', () => {
    const result = checkRecords([
      run,
      w('B', 2, 100, 'accepted', 1),
      w('A', 1, 50, 'accepted', 2), // measured earlier, committed later: stale
      w('A', 1, 60, 'rejected'),
    ]);
    expect(result.safe).toBe(false);
    expect(result.staleAccepted).toEqual([
      { resource: 'r', owner: 'A', token: 1, at: 50, after: 2 },
    ]);
    // Without commit numbers the time order decides.
    expect(checkRecords([run, w('A', 1, 50, 'accepted'), w('B', 2, 100, 'accepted')]).safe).toBe(
      true,
    );
  });

  it('reports a liveness gap apart from safety, counting only time a worker was live', () => {
    const gap = checkRecords([run, ready('A', 0), b('A', 1, 10, 100), b('A', 2, 3000, 3100)]);
    expect(gap.safe).toBe(true);
    expect(gap.liveness).toHaveLength(1);
    expect(gap.liveness[0]).toMatchObject({ resource: 'r', from: 100, to: 3000, ms: 2900 });
    // No worker live from 200 to 2900: only 200 ms of the gap counts.
    const dead = checkRecords([
      run,
      ready('A', 0),
      b('A', 1, 10, 100),
      { type: 'worker', worker: 'A', event: 'exit', at: 200 },
      ready('B', 2900),
      b('B', 2, 3000, 3100),
    ]);
    expect(dead.liveness).toEqual([]);
  });

  it('takes p50, p99 and max by nearest rank', () => {
    const samples = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(latencies(samples)).toEqual({ count: 100, p50: 50, p99: 99, max: 100 });
    expect(latencies([])).toEqual({ count: 0, p50: null, p99: null, max: null });
  });

  it('reads back what it writes, and names the line of a bad record', () => {
    const text = clean().map(historyLine).join('');
    expect(parseHistory(`${text}\n`)).toEqual(clean());
    expect(() => parseHistory('{"type":"run"}')).toThrow(/line 1 \(run\) needs a number "ttlMs"/);
    expect(() => parseHistory(`${historyLine(run)}not json`)).toThrow(/line 2 is not JSON/);
    expect(() => parseHistory('{"type":"nope"}')).toThrow(/line 1 is not a history record/);
  });
});

describe('belief intervals from worker reports', () => {
  const lease = { w: 'A', resource: 'r', token: 1 };

  it('end at the release, or at the holder deadline when the loss was noticed late or never', () => {
    const beliefs = new Beliefs();
    beliefs.record({ e: 'acquired', ...lease, at: 10.0000004, until: 900 });
    beliefs.record({ e: 'renewed', ...lease, at: 250, until: 1150 });
    beliefs.record({ e: 'released', ...lease, at: 400.0000001, until: 1150 });
    beliefs.record({ e: 'acquired', w: 'B', resource: 'r', token: 2, at: 500, until: 1400 });
    beliefs.record({ e: 'lost', w: 'B', resource: 'r', token: 2, at: 2000, until: 1400 });
    beliefs.record({ e: 'acquired', w: 'C', resource: 'r', token: 3, at: 2000, until: 2900 });
    const out = beliefs.records();
    // Rounded outward to the microsecond: the interval only ever widens.
    expect(out.map((r) => [r.owner, r.from, r.to, r.how])).toEqual([
      ['A', 10, 400.001, 'released'],
      ['B', 500, 1400, 'deadline'],
      ['C', 2000, 2900, 'died'],
    ]);
  });
});

describe('the checker with --permits N', () => {
  const P = '\u0001permit=';
  const permitRun: RunRecord = { ...run, permits: 3, workers: 4 };

  it('accepts N owners of one name at once, one per permit, and counts them', () => {
    const result = checkRecords([
      permitRun,
      b('A', 1, 0, 100, 'r'),
      b('B', 1, 10, 100, `r${P}1`),
      b('C', 1, 20, 100, `r${P}2`),
      b('D', 2, 100, 200, 'r'), // takes permit 0 as A's belief ends
    ]);
    expect(result.safe).toBe(true);
    expect(result.tooMany).toEqual([]);
    expect(result.mostOwners).toBe(3);
    expect(result.permits).toBe(3);
  });

  it('fails on a fourth owner at once, naming the name, the instant and the holders', () => {
    // Every permit record on its own is fine; the name has one owner too many (a worker using
    // another N, or a store picking a permit beyond N).
    const result = checkRecords([
      permitRun,
      b('A', 1, 0, 100, 'r'),
      b('B', 1, 10, 100, `r${P}1`),
      b('C', 1, 20, 100, `r${P}2`),
      b('D', 1, 30, 60, `r${P}3`),
    ]);
    expect(result.safe).toBe(false);
    expect(result.overlaps).toEqual([]);
    expect(result.tooMany).toHaveLength(1);
    expect(result.tooMany[0]).toMatchObject({ resource: 'r', permits: 3, at: 30 });
    expect(result.tooMany[0]!.holders.map((h) => [h.owner, h.permit])).toEqual([
      ['A', 0],
      ['B', 1],
      ['C', 2],
      ['D', 3],
    ]);
    // Holders that began at the same instant all count at that instant, whichever sorts first.
    const together = checkRecords([
      permitRun,
      ...[0, 1, 2, 3].map((p, i) => b('ABCD'[i]!, 1, 50, 100, p === 0 ? 'r' : `r${P}${p}`)),
    ]);
    expect(together.mostOwners).toBe(4);
    expect(together.tooMany.map((t) => [t.at, t.holders.length])).toEqual([
      [50, 4],
      [50, 4],
      [50, 4],
      [50, 4],
    ]);
  });

  it('still fails on two owners of one permit, and judges liveness per name', () => {
    const result = checkRecords([
      permitRun,
      b('A', 1, 0, 100, `r${P}1`),
      b('B', 2, 50, 150, `r${P}1`),
      { type: 'worker', worker: 'A', event: 'ready', at: 0 } as HistoryRecord,
      b('C', 1, 140, 5000, 'r'), // permit 0 keeps the name served: no gap on r
      { type: 'end', at: 5000 } as HistoryRecord,
    ]);
    expect(result.safe).toBe(false);
    expect(result.overlaps.map((o) => o.resource)).toEqual([`r${P}1`]);
    expect(result.liveness).toEqual([]);
  });
});

describe('the checker on progress kept as lease data', () => {
  const read = (owner: string, token: number, from: number, to: number, r: number | null) => ({
    ...b(owner, token, from, to),
    read: r === null ? null : { token: token - 1, n: r },
  });
  const landed = (owner: string, token: number, n: number, at: number): HistoryRecord => ({
    type: 'data',
    resource: 'r',
    owner,
    token,
    n,
    at,
    outcome: 'landed',
  });

  it('accepts progress counted on from what each grant read', () => {
    const result = checkRecords([
      run,
      read('A', 1, 0, 100, null),
      landed('A', 1, 1, 10),
      landed('A', 1, 2, 20),
      read('B', 2, 150, 300, 2),
      landed('B', 2, 3, 160),
    ]);
    expect(result.data.violations).toEqual([]);
    expect(result.data.landed).toBe(3);
    expect(result.safe).toBe(true);
  });

  it("fails on an ex-holder's write that landed after a newer grant read, and on reads going backwards", () => {
    const late = checkRecords([
      run,
      read('A', 1, 0, 100, null),
      landed('A', 1, 1, 10),
      read('B', 2, 150, 300, 1),
      landed('A', 1, 2, 170), // acknowledged after B's grant read 1: it landed after it
    ]);
    expect(late.safe).toBe(false);
    expect(late.data.violations.map((v) => [v.kind, v.grant.owner, v.other.n])).toEqual([
      ['late-write', 'B', 2],
    ]);
    const backwards = checkRecords([run, read('A', 1, 0, 100, 5), read('B', 2, 150, 300, 3)]);
    expect(backwards.data.violations.map((v) => v.kind)).toEqual(['backwards']);
    const stale = checkRecords([run, { ...b('A', 3, 0, 100), read: { token: 3, n: 1 } }]);
    expect(stale.data.violations.map((v) => v.kind)).toEqual(['stale-read']);
  });
});
