import { expect, it } from 'vitest';
import type { LeaseRecord } from '../../src/index.js';
import { permitResource } from '../../src/core/permits.js';
import { frameLines } from '../../src/cli/watch/frame.js';

// The terminal table of `leasehold watch`: a name's permits stay together, the name placed by its
// most urgent record.

const NOW = 1_000_000;
const record = (resource: string, owner: string, leftMs: number): LeaseRecord => ({
  resource,
  owner,
  token: 1,
  expiresAt: NOW + leftMs,
});

it('keeps a name’s permits together in number order, names with an expired record first', () => {
  const records = [
    record('zeta', 'z', 50_000),
    record(permitResource('api', 10), 'a', 50_000),
    record(permitResource('api', 2), 'b', -5_000), // expired
    record('api', 'c', 50_000),
    record('api\u0001queue=001', `${'1'.padStart(16, '0')}|w`, 50_000),
  ];
  const lines = frameLines({
    title: 't',
    tracked: records.map((r) => ({ record: r, ttlEstimateMs: 60_000, live: true })),
    events: [],
    now: NOW,
    skewMs: 0,
    error: undefined,
    columns: 120,
    rows: 30,
    color: false,
  });
  const table = lines.slice(3).map((line) => line.split(/\s{2,}/).slice(0, 3));
  expect(table).toEqual([
    ['api', 'permit 0', 'c'],
    ['api', 'permit 2', 'b'],
    ['api', 'permit 10', 'a'],
    ['zeta', 'z', '1'],
  ]);
  expect(lines.join('\n')).not.toContain('\u0001');
});
