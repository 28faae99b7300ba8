import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startDashboard, type Dashboard } from '../../src/cli/dashboard/server.js';
import type { LeaseStore } from '../../src/index.js';

/** Debian's Chromium: the tests drive it with playwright-core, never a downloaded browser. */
export const CHROMIUM = '/usr/bin/chromium';

/** Why the browser tests cannot run here, or `null` when they can. */
export const chromiumMissing: string | null = existsSync(CHROMIUM)
  ? null
  : `no Chromium at ${CHROMIUM} (apt-get install chromium)`;

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** A dashboard on `store` and a headless Chromium page showing it, once the page is ready. */
export interface DashboardPage {
  readonly dashboard: Dashboard;
  readonly browser: Browser;
  readonly page: Page;
  /** Closes the browser, then the dashboard (not the store). */
  close(): Promise<void>;
}

export async function openDashboardPage(store: LeaseStore, pollMs: number): Promise<DashboardPage> {
  const dashboard = await startDashboard({ store, port: 0, pollMs });
  const browser = await launchChromium().catch(async (error: unknown) => {
    await dashboard.close();
    throw error;
  });
  const page = await browser.newPage({ viewport: { width: 1300, height: 900 } });
  await page.goto(dashboard.url);
  await page.waitForSelector('body[data-ready="1"]');
  return {
    dashboard,
    browser,
    page,
    close: async () => {
      await browser.close();
      await dashboard.close();
    },
  };
}
