import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { safetyReport } from '../../src/cli/demo/report.js';
import { Beliefs } from '../../src/cli/harness/beliefs.js';
import { checkRecords } from '../../src/cli/harness/checker.js';
import { createDownstream, unreportedWrites } from '../../src/cli/harness/downstream.js';
import type { BeliefRecord } from '../../src/cli/harness/history-format.js';
import { tempDir } from '../harness/processes.js';

const dir = tempDir('leasehold-demo-safety-');
afterAll(() => dir.cleanup());

const b = (owner: string, token: number, from: number, to: number): BeliefRecord => ({
  type: 'belief',
  resource: 'r',
  owner,
  token,
  from,
  to,
  how: 'released',
});

describe('the demo safety checks', () => {
  it('flags a belief overlapping any earlier one, not only its neighbour', () => {
    const safety = safetyReport(
      checkRecords([b('A', 1, 0, 100), b('B', 2, 10, 20), b('C', 3, 30, 40)]),
    );
    expect(safety.safe).toBe(false);
    expect(safety.overlaps).toHaveLength(2);
    expect(safety.overlaps[1]).toMatch(
      /^r: C \(token 3\) started 70\.000 ms before A \(token 1\) stopped/,
    );
    expect(safety.tokenOrder).toEqual([]);
    expect(safetyReport(checkRecords([b('A', 1, 0, 10), b('B', 2, 10, 20)]))).toEqual({
      safe: true,
      tenures: 2,
      handovers: 1,
      overlaps: [],
      tokenOrder: [],
      writesChecked: 0,
      staleWritesAccepted: [],
    });
  });

  it('flags a token that does not rise from one holder to the next', () => {
    const safety = safetyReport(checkRecords([b('A', 2, 0, 10), b('B', 2, 10, 20)]));
    expect(safety.safe).toBe(false);
    expect(safety.tokenOrder).toEqual(['r: token 2 of B follows token 2']);
  });

  it('ends a belief at the release, the noticed loss or the last reported deadline, whichever is first', () => {
    const beliefs = new Beliefs();
    const lease = { resource: 'r', w: 'A', token: 1 };
    beliefs.record({ e: 'acquired', ...lease, at: 0, until: 900 });
    beliefs.record({ e: 'renewed', ...lease, at: 250, until: 1150 });
    // A frozen worker that noticed its loss long after its deadline believed only until the deadline.
    beliefs.record({ e: 'lost', ...lease, at: 3000, until: 1150 });
    const killed = { resource: 's', w: 'B', token: 4 };
    beliefs.record({ e: 'acquired', ...killed, at: 10, until: 910 });
    beliefs.record({ e: 'renewed', ...killed, at: 260, until: 1160 });
    const released = { resource: 'q', w: 'C', token: 2 };
    beliefs.record({ e: 'acquired', ...released, at: 20, until: 920 });
    beliefs.record({ e: 'released', ...released, at: 300, until: 920 });
    expect(beliefs.isOpen('B', 's', 4)).toBe(true);
    expect(beliefs.isOpen('C', 'q', 2)).toBe(false);
    expect(beliefs.isOpen('A', 'r', 2)).toBe(false);
    const byResource = Object.fromEntries(beliefs.records().map((x) => [x.resource, x]));
    expect(byResource.r).toMatchObject({ from: 0, to: 1150, how: 'deadline' });
    expect(byResource.s).toMatchObject({ from: 10, to: 1160, how: 'died' });
    expect(byResource.q).toMatchObject({ from: 20, to: 300, how: 'released' });
  });

  it('finds an accepted write whose token is below one already committed, reading the downstream', async () => {
    const path = join(dir.path, 'downstream.db');
    await createDownstream(path);
    const db = new Database(path);
    const insert = db.prepare(
      'INSERT INTO demo_writes (resource, token, worker, seq, at) VALUES (?, ?, ?, 1, ?)',
    );
    for (const [resource, token, worker, at] of [
      ['r', 1, 'A', 1],
      ['r', 2, 'B', 2],
      ['s', 1, 'A', 3],
      ['r', 1, 'A', 4],
      ['r', 2, 'B', 5],
    ] as const)
      insert.run(resource, token, worker, at);
    db.close();
    // The first write was reported by its worker: it is read from the downstream only once.
    const reported = {
      type: 'write',
      resource: 'r',
      owner: 'A',
      token: 1,
      at: 1,
      outcome: 'accepted',
      commit: 1,
    } as const;
    const writes = unreportedWrites(path, [reported]);
    expect(writes.map((w) => w.commit)).toEqual([2, 3, 4, 5]);
    const safety = safetyReport(checkRecords([reported, ...writes]));
    expect(safety.writesChecked).toBe(5);
    expect(safety.staleWritesAccepted).toEqual([
      'r: write by worker A under token 1 committed after token 2',
    ]);
  });
});
