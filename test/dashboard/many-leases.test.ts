import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SqliteStore } from '../../src/index.js';
import { describeServer } from '../harness/describe-server.js';
import { chromiumMissing, openDashboardPage, type DashboardPage } from './browser.js';

// 10,000 leases: the page stays usable (only the rows in view exist), filters, sorts and scrolls.

const COUNT = 10_000;
const OWNERS = 25;
const name = (i: number): string => `bulk/${String(i).padStart(4, '0')}`;

// The callbacks given to `page.evaluate` run in the page; this file compiles without the DOM library.
interface El {
  dataset: Record<string, string | undefined>;
  scrollTop: number;
}
declare const document: {
  querySelectorAll(selector: string): Iterable<El> & ArrayLike<El>;
  getElementById(id: string): El;
};

describeServer('the dashboard with 10,000 leases, in headless Chromium', chromiumMissing, () => {
  let store: SqliteStore;
  let opened: DashboardPage | undefined;
  let page: Page;

  beforeAll(async () => {
    store = await SqliteStore.open(':memory:');
    const perOwner = COUNT / OWNERS;
    for (let o = 0; o < OWNERS; o++) {
      const resources = Array.from({ length: perOwner }, (_, i) => name(o * perOwner + i));
      await store.acquireMany(resources, `owner-${o}`, 600_000);
    }
    // One resource with a higher token than the rest.
    for (let i = 0; i < 2; i++) {
      const lease = (await store.get(name(4242)))!;
      await store.release(lease);
      await store.tryAcquire(name(4242), 'owner-x', 600_000);
    }
    opened = await openDashboardPage(store, 1000);
    page = opened.page;
  }, 60_000);

  afterAll(async () => {
    await opened?.close();
    await store?.close();
  });

  const rows = (): Promise<{ resource: string; token: number }[]> =>
    page.evaluate(() =>
      [...document.querySelectorAll('#rows .row:not([hidden])')].map((r) => ({
        resource: r.dataset.resource!,
        token: Number(r.dataset.token),
      })),
    );

  it('renders only the rows in view, and scrolls to the last', async () => {
    expect(await page.textContent('#count')).toBe(`${COUNT} records`);
    const first = await rows();
    expect(first.length).toBeGreaterThan(10);
    expect(first.length).toBeLessThan(60);
    expect(first[0]!.resource).toBe(name(0));
    await page.evaluate(() => {
      document.getElementById('viewport').scrollTop = 1e9;
    });
    await page.waitForFunction(
      (last) =>
        [...document.querySelectorAll('#rows .row:not([hidden])')].some(
          (r) => r.dataset.resource === last,
        ),
      name(COUNT - 1),
    );
    expect((await rows()).length).toBeLessThan(60);
  });

  it('filters by prefix and owner, and sorts by a column', async () => {
    await page.fill('#f-prefix', 'bulk/09');
    expect(await page.textContent('#count')).toBe(`100 of ${COUNT} records`);
    await page.fill('#f-prefix', '');
    await page.fill('#f-owner', 'owner-x');
    expect(await page.textContent('#count')).toBe(`1 of ${COUNT} records`);
    expect((await rows()).map((r) => r.resource)).toEqual([name(4242)]);
    await page.fill('#f-owner', '');
    await page.click('.thead button[data-sort="token"]'); // ascending
    await page.click('.thead button[data-sort="token"]'); // descending
    const top = await rows();
    expect(top[0]).toEqual({ resource: name(4242), token: 3 });
    expect(top[1]!.token).toBe(1);
    // With this many resources the timeline has a lane per owner.
    expect(await page.textContent('#lanes-note')).toContain('one lane per owner');
  });
});
