import { expect, it } from 'vitest';
import { permitResources } from '../../src/core/permits.js';
import { checkTenures, type Tenure } from '../harness/tenures.js';

const t = (resource: string, owner: string, token: number, start: number, end: number): Tenure => ({
  resource,
  owner,
  token,
  start,
  end,
  how: 'released',
});

it('accepts back-to-back tenures with rising tokens', () => {
  const v = checkTenures([t('r', 'a', 1, 0, 10), t('r', 'b', 2, 10.5, 20), t('s', 'a', 1, 5, 30)]);
  expect(v).toEqual({ violations: [], handovers: 1, mostOwners: 1 });
});

it('flags two owners at once and a token that does not rise', () => {
  const v = checkTenures([t('r', 'a', 1, 0, 10), t('r', 'b', 2, 9, 20), t('r', 'c', 2, 30, 40)]);
  expect(v.violations).toHaveLength(2);
  expect(v.violations[0]).toMatch(/b \(token 2\) started 1\.000 ms before a/);
  expect(v.violations[1]).toMatch(/token 2 of c follows token 2/);
});

it('flags a tenure overlapping an earlier one that is not its neighbour', () => {
  const v = checkTenures([t('r', 'a', 1, 0, 100), t('r', 'b', 2, 10, 20), t('r', 'c', 3, 30, 40)]);
  expect(v.violations).toEqual([
    'r: b (token 2) started 90.000 ms before a (token 1) stopped',
    'r: c (token 3) started 70.000 ms before a (token 1) stopped',
  ]);
});

it("counts a counting lease's holders together, one permit record each", () => {
  const [n0, n1, n2] = permitResources('n', 3);
  const v = checkTenures([
    t(n0!, 'a', 1, 0, 10),
    t(n1!, 'b', 1, 5, 20),
    t(n2!, 'c', 1, 8, 9),
    t(n2!, 'd', 2, 12, 30),
  ]);
  expect(v).toEqual({ violations: [], handovers: 1, mostOwners: 3 });
});
