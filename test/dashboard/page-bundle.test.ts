import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleModule, bundlePage, PAGE_BUNDLE, PAGE_ENTRY } from '../../scripts/bundle-page.mjs';
import type * as PageMessages from '../../src/cli/dashboard/page/messages.js';
import { startDashboard, type Dashboard } from '../../src/cli/dashboard/server.js';
import type * as ServerMessages from '../../src/cli/dashboard/wire.js';
import { SqliteStore } from '../../src/index.js';
import { describeServer } from '../harness/describe-server.js';
import { chromiumMissing, launchChromium } from './browser.js';

// The page script is TypeScript of its own (src/cli/dashboard/page/), bundled into
// src/cli/dashboard/page-bundle.ts by scripts/bundle-page.mjs; the page judges a record's state
// with the server's own rule (src/cli/live/lease-state.ts), bundled in.

const ROOT = new URL('../../', import.meta.url);

// What the server sends fits what the page reads (checked by the compiler: a field the page reads
// that the server no longer sends, or sends with another type, fails `tsc`).
export const serverSnapshotFitsThePage = (m: ServerMessages.Snapshot): PageMessages.Snapshot => m;
export const serverUpdateFitsThePage = (m: ServerMessages.Update): PageMessages.Update => m;

describe('the page bundle', () => {
  it('is committed as bundled from the sources now (npm run build writes it)', async () => {
    const committed = readFileSync(new URL(PAGE_BUNDLE, ROOT), 'utf8');
    expect(committed).toBe(bundleModule((await bundlePage()).code));
  });

  it('is made of the page, the lease-state rule and the record marks, and nothing of Node', async () => {
    const { code, inputs } = await bundlePage();
    expect(inputs).toContain(PAGE_ENTRY);
    expect(inputs.filter((file) => !file.startsWith('src/cli/dashboard/page/'))).toEqual([
      'src/cli/live/lease-state.ts',
      'src/core/lease.ts',
      'src/core/record-marks.ts',
    ]);
    // Inline in the page's <script>: nothing that would end it early, no control characters.
    expect(code).not.toMatch(/<\/script|<!--/i);
    expect(code).toMatch(/^[\t\n\r\x20-\x7e]*$/);
    expect(code).toContain('\\u0001permit=');
  });
});

describeServer('the page’s record states, in headless Chromium', chromiumMissing, () => {
  let store: SqliteStore;
  let dashboard: Dashboard;
  let browser: Browser;

  beforeAll(async () => {
    store = await SqliteStore.open(':memory:');
    await store.tryAcquire('job/1', 'w1', 600_000);
    dashboard = await startDashboard({ store, port: 0, pollMs: 1000 });
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await dashboard?.close();
    await store?.close();
  });

  /** The state the page shows for job/1, with `script` in place of the page's own when given. */
  const shownState = async (script?: string): Promise<string | null> => {
    const page: Page = await browser.newPage();
    try {
      if (script !== undefined)
        await page.route(dashboard.url, async (route) => {
          const response = await route.fetch();
          const html = (await response.text()).replace(
            /(<script nonce="[^"]+">)[\s\S]*(<\/script>)/,
            (_all, open: string, close: string) => open + script + close,
          );
          await route.fulfill({ response, body: html });
        });
      await page.goto(dashboard.url);
      await page.waitForSelector('body[data-ready="1"]');
      return await page.getAttribute('#rows .row[data-resource="job/1"]', 'data-state');
    } finally {
      await page.close();
    }
  };

  it('follows a change of the rule in lease-state.ts', async () => {
    // A fresh grant, with all its TTL left: held, on the server and on the page.
    const state = (await (await fetch(new URL('/api/state', dashboard.url))).json()) as {
      records: ServerMessages.WireRecord[];
    };
    expect(state.records.map((r) => [r[0], r[5]])).toEqual([['job/1', 'held']]);
    expect(await shownState()).toBe('held');
    // The same page bundled with a stricter rule (at risk under twice the TTL, so always): the
    // page shows what the changed module says, while the server still says held.
    let changed = false;
    const { code } = await bundlePage([
      {
        name: 'stricter-lease-state',
        setup(build) {
          build.onLoad({ filter: /[\\/]cli[\\/]live[\\/]lease-state\.ts$/ }, (args) => {
            const source = readFileSync(args.path, 'utf8');
            const stricter = source.replace('ttlEstimateMs / 2', 'ttlEstimateMs * 2');
            changed = stricter !== source;
            return { contents: stricter, loader: 'ts' };
          });
        },
      },
    ]);
    expect(changed).toBe(true);
    expect(await shownState(code)).toBe('at-risk');
  });
});
