import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { slotOwner } from '../../src/client/fair-line.js';
import { permitResource } from '../../src/core/permits.js';
import { SqliteStore } from '../../src/index.js';
import { describeServer } from '../harness/describe-server.js';
import { tempDir, waitFor } from '../harness/processes.js';
import { chromiumMissing, openDashboardPage, type DashboardPage } from './browser.js';

// The lease table groups a name's permits after its own record, labelled by number, and counts
// fair-line records and election candidates' registrations as internal; on a SQLite file, in
// headless Chromium.

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\0-\x1f\x7f-\x9f]/u;

interface El {
  dataset: Record<string, string | undefined>;
  textContent: string | null;
  checked: boolean;
  dispatchEvent(event: unknown): boolean;
}
declare const document: {
  querySelectorAll(selector: string): Iterable<El> & ArrayLike<El>;
  getElementById(id: string): El;
};
declare const Event: new (type: string) => unknown;

describeServer('the dashboard groups permits, in headless Chromium', chromiumMissing, () => {
  const dir = tempDir('leasehold-dashboard-permits-');
  let store: SqliteStore;
  let opened: DashboardPage | undefined;
  let page: Page;

  beforeAll(async () => {
    store = await SqliteStore.open(join(dir.path, 'permits.db'));
    for (const [name, permits] of [
      ['api', [0, 10, 2, 1]],
      ['db', [4]],
    ] as const)
      for (const p of permits) await store.tryAcquire(permitResource(name, p), `w${p}`, 600_000);
    await store.tryAcquire('api-x', 'solo', 600_000);
    await store.tryAcquire('api\u0001queue=042', slotOwner(3, 'waiter'), 600_000);
    await store.tryAcquire('db\u0001candidate=3:c', 'c', 600_000);
    opened = await openDashboardPage(store, 250);
    page = opened.page;
  }, 60_000);

  afterAll(async () => {
    await opened?.close();
    await store?.close();
    dir.cleanup();
  });

  const rows = (): Promise<string[][]> =>
    page.evaluate(() =>
      [...document.querySelectorAll('#rows .row:not([hidden])')].map((r) => [
        r.dataset.name!,
        r.dataset.permit!,
        r.dataset.part!,
        r.dataset.resource!.includes('\u0001') ? 'key' : '',
      ]),
    );
  const cells = (): Promise<string[]> =>
    page.evaluate(() =>
      [...document.querySelectorAll('#rows .row:not([hidden]) .res')].map((c) => c.textContent!),
    );

  it('shows a name’s permits after its own record in number order, and fair lines and candidates only with internal records', async () => {
    expect(await rows()).toEqual([
      ['api', '0', 'permit 0', ''],
      ['api', '1', 'permit 1', 'key'],
      ['api', '2', 'permit 2', 'key'],
      ['api', '10', 'permit 10', 'key'],
      ['api-x', '0', '', ''],
      ['db', '4', 'permit 4', 'key'],
    ]);
    for (const text of await cells()) expect(text).not.toMatch(CONTROL);
    expect(await cells()).toContain('apipermit 10');

    await page.evaluate(() => {
      const box = document.getElementById('f-internal');
      box.checked = true;
      box.dispatchEvent(new Event('change'));
    });
    await waitFor('the fair-line and candidate rows', async () => (await rows()).length === 8);
    const line = (await rows())[4];
    expect(line).toEqual(['api', '', 'fair line, place 1', 'key']);
    expect((await rows())[7]).toEqual(['db', '', 'candidate, priority 3', 'key']);
    const owner = await page.evaluate(
      () => [...document.querySelectorAll('#rows .row:not([hidden]) .own')][4]!.textContent,
    );
    expect(owner).toBe('waiter');
  });
});
