import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SqliteStore, type Lease } from '../../src/index.js';
import { describeServer } from '../harness/describe-server.js';
import { tempDir, waitFor } from '../harness/processes.js';
import { chromiumMissing, openDashboardPage, type DashboardPage } from './browser.js';

// The lease table shows each lease's data, cut and escaped, as text (never as HTML), and follows
// a new value; on a SQLite file, in headless Chromium.

interface El {
  dataset: Record<string, string | undefined>;
  textContent: string | null;
  hidden: boolean;
}
declare const document: {
  querySelectorAll(selector: string): Iterable<El> & ArrayLike<El>;
};

describeServer('the dashboard shows lease data, in headless Chromium', chromiumMissing, () => {
  const dir = tempDir('leasehold-dashboard-data-');
  let store: SqliteStore;
  let opened: DashboardPage | undefined;
  let page: Page;
  let lease: Lease;

  beforeAll(async () => {
    store = await SqliteStore.open(join(dir.path, 'data.db'));
    lease = (await store.tryAcquire('ckpt', 'w1', 600_000))!;
    await store.writeData(lease, `<img src=x onerror=alert(1)>\u001b[31m${'z'.repeat(300)}`);
    const bytes = (await store.tryAcquire('blob', 'w2', 600_000))!;
    await store.writeData(bytes, new Uint8Array([0, 1, 255]));
    await store.tryAcquire('plain', 'w3', 600_000);
    opened = await openDashboardPage(store, 200);
    page = opened.page;
  }, 60_000);

  afterAll(async () => {
    await opened?.close();
    await store?.close();
    dir.cleanup();
  });

  const shown = (): Promise<Record<string, string | null>> =>
    page.evaluate(() =>
      Object.fromEntries(
        [...document.querySelectorAll('#rows .row:not([hidden])')].map((r) => {
          const data = (r as unknown as { querySelector(s: string): El }).querySelector('.data');
          return [r.dataset.resource!, data.hidden ? null : data.textContent];
        }),
      ),
    );

  it('shows the data cut and escaped as text, bytes by size, and follows a new value', async () => {
    const first = await shown();
    expect(first.plain).toBeNull();
    expect(first.blob).toBe('3 bytes, base64 AAH/');
    expect(first.ckpt).toMatch(/^"<img src=x onerror=alert\(1\)>\\x1b\[31mz+…" \(\d+ bytes\)$/);
    expect(first.ckpt!.length).toBeLessThan(120);
    // Text, never markup: no image element was made from the value.
    expect(await page.evaluate(() => document.querySelectorAll('#rows img').length)).toBe(0);
    await store.writeData(lease, 'offset=42');
    await waitFor('the new value on the page', async () => (await shown()).ckpt === '"offset=42"');
  }, 30_000);
});
