import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { checkHistory, type Tenure } from '../../src/cli/demo/check-history.js';
import { checkDownstream, createDownstream } from '../../src/cli/harness/downstream.js';
import { History } from '../../src/cli/demo/history.js';
import { tempDir } from '../harness/processes.js';

const dir = tempDir('leasehold-demo-safety-');
afterAll(() => dir.cleanup());

const t = (owner: string, token: number, start: number, end: number): Tenure => ({
  resource: 'r',
  owner,
  token,
  start,
  end,
  how: 'released',
});

describe('the demo safety checks', () => {
  it('flags a tenure overlapping any earlier one, not only its neighbour', () => {
    const verdict = checkHistory([t('A', 1, 0, 100), t('B', 2, 10, 20), t('C', 3, 30, 40)]);
    expect(verdict.overlaps).toHaveLength(2);
    expect(verdict.overlaps[1]).toMatch(
      /^r: C \(token 3\) started 70\.000 ms before A \(token 1\) stopped/,
    );
    expect(verdict.tokenOrder).toEqual([]);
    expect(checkHistory([t('A', 1, 0, 10), t('B', 2, 10, 20)])).toEqual({
      overlaps: [],
      tokenOrder: [],
      handovers: 1,
    });
  });

  it('ends a belief at the release, the noticed loss or the last reported deadline, whichever is first', () => {
    const history = new History();
    const lease = { resource: 'r', w: 'A', token: 1 };
    history.record({ e: 'acquired', ...lease, at: 0, validUntilWall: 900 });
    history.record({ e: 'renewed', ...lease, at: 250, validUntilWall: 1150 });
    // A frozen worker that noticed its loss long after its deadline believed only until the deadline.
    history.record({ e: 'lost', ...lease, at: 3000, validUntilWall: 1150 });
    const killed = { resource: 's', w: 'B', token: 4 };
    history.record({ e: 'acquired', ...killed, at: 10, validUntilWall: 910 });
    history.record({ e: 'renewed', ...killed, at: 260, validUntilWall: 1160 });
    const released = { resource: 'q', w: 'C', token: 2 };
    history.record({ e: 'acquired', ...released, at: 20, validUntilWall: 920 });
    history.record({ e: 'released', ...released, at: 300, validUntilWall: 920 });
    expect(history.isOpen('B', 's', 4)).toBe(true);
    expect(history.isOpen('C', 'q', 2)).toBe(false);
    const byResource = Object.fromEntries(history.tenures().map((x) => [x.resource, x]));
    expect(byResource.r).toMatchObject({ start: 0, end: 1150, how: 'lost after its deadline' });
    expect(byResource.s).toMatchObject({ start: 10, end: 1160, how: 'abandoned' });
    expect(byResource.q).toMatchObject({ start: 20, end: 300, how: 'released' });
  });

  it('finds an accepted write whose token is below one already committed', async () => {
    const path = join(dir.path, 'downstream.db');
    await createDownstream(path);
    const db = new Database(path);
    const insert = db.prepare(
      'INSERT INTO demo_writes (resource, token, worker, seq, at) VALUES (?, ?, ?, 1, 0)',
    );
    for (const [resource, token, worker] of [
      ['r', 1, 'A'],
      ['r', 2, 'B'],
      ['s', 1, 'A'],
      ['r', 1, 'A'],
      ['r', 2, 'B'],
    ] as const)
      insert.run(resource, token, worker);
    db.close();
    const verdict = checkDownstream(path);
    expect(verdict.writes).toBe(5);
    expect(verdict.stale).toEqual([
      'r: write #4 by worker A under token 1 committed after token 2',
    ]);
  });
});
