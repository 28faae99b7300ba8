import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fleetView } from '../../src/cli/dashboard/fleet-view.js';
import { membersPrefix } from '../../src/fleet/members.js';
import { SqliteStore, type LeaseRecord } from '../../src/index.js';
import { describeServer } from '../harness/describe-server.js';
import { tempDir } from '../harness/processes.js';
import { chromiumMissing, openDashboardPage, type DashboardPage } from './browser.js';

// A group that balances by weight: each member's load against its fair load, as it published them
// in its membership record, and which member said it is below its band.

const prefix = membersPrefix('g');
const record = (slot: string, owner: string, data?: unknown): LeaseRecord => ({
  resource: `${prefix}@0000000${slot}`,
  owner,
  token: 1,
  expiresAt: 10_000,
  ...(data === undefined ? {} : { data: JSON.stringify(data) }),
});

it('reads each member’s published load and fair load, and whether it is below its band', () => {
  const view = fleetView(
    [
      record('1', 'a', { o: 'a', l: {}, w: [12.3, 13] }),
      record('2', 'b', { o: 'b', l: {}, u: 1, w: [9, 13] }),
      record('3', 'c', { o: 'someone-before', l: {}, w: [50, 13] }), // an earlier holder's
      record('4', 'd', { o: 'd', l: {}, w: [-1, 13] }), // not a load
      record('5', 'e'), // counting leases
    ],
    0,
    0,
  );
  expect(view.members.map((m) => [m.id, m.weighed])).toEqual([
    ['a', { load: 12.3, fair: 13, below: false }],
    ['b', { load: 9, fair: 13, below: true }],
    ['c', undefined],
    ['d', undefined],
    ['e', undefined],
  ]);
});

interface El {
  dataset: Record<string, string | undefined>;
  textContent: string | null;
}

describeServer('the dashboard shows loads, in headless Chromium', chromiumMissing, () => {
  const dir = tempDir('leasehold-dashboard-loads-');
  let store: SqliteStore;
  let opened: DashboardPage | undefined;
  let page: Page;

  beforeAll(async () => {
    store = await SqliteStore.open(join(dir.path, 'loads.db'));
    for (const [slot, owner, data] of [
      ['1', 'a', { o: 'a', l: {}, w: [14.2, 13] }],
      ['2', 'b', { o: 'b', l: {}, u: 1, w: [9, 13] }],
    ] as const) {
      const lease = (await store.tryAcquire(`${prefix}@0000000${slot}`, owner, 600_000))!;
      expect(await store.writeData(lease, JSON.stringify(data))).toBe(true);
    }
    await store.tryAcquire('shard/1', 'a', 600_000);
    opened = await openDashboardPage(store, 250);
    page = opened.page;
  }, 60_000);

  afterAll(async () => {
    await opened?.close();
    await store?.close();
    dir.cleanup();
  });

  it('each member’s load against its fair load, and the one below its band marked', async () => {
    await page.waitForSelector('#members tr[data-member="b"]');
    const rows = await page.$$eval('#members tr[data-member]', (trs) =>
      trs.map((tr) => {
        const row = tr as unknown as El & { cells: ArrayLike<El> };
        return {
          id: row.dataset.member,
          below: row.dataset.below ?? '',
          leases: row.cells[1]!.textContent,
          fair: row.cells[2]!.textContent,
        };
      }),
    );
    expect(rows).toEqual([
      { id: 'a', below: '', leases: '1 · load 14.2', fair: 'load 13' },
      { id: 'b', below: '1', leases: '0 · load 9', fair: 'load 13' },
    ]);
    const titles = await page.$$eval('#members tr[data-member] .share', (bars) =>
      bars.map((b) => (b as unknown as { title: string }).title),
    );
    expect(titles[1]).toContain('below its band');
  });
});
