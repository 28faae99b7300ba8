import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SqliteStore, type LeaseRecord } from '../../src/index.js';
import { startCli, type StartedCli } from '../cli/run-cli.js';
import { describeServer } from '../harness/describe-server.js';
import { tempDir, waitFor } from '../harness/processes.js';
import { chromiumMissing, launchChromium } from './browser.js';

// `leasehold dashboard` (the built CLI) on a SQLite file shared with three LeaseManager worker
// processes, looked at in a real headless Chromium.

const WORKER = fileURLToPath(new URL('./fleet-worker.mjs', import.meta.url));
const ARTIFACTS = join(import.meta.dirname, '../../test-results/dashboard');
const RESOURCES = 12;
const OWNERS = ['w0', 'w1', 'w2'];
const TOKEN = 'admin-secret-for-the-test';
/** A name that would run script if the page ever used it as HTML. */
const HOSTILE = '<img src=x onerror="document.body.dataset.pwned=1">';
const HOSTILE_OWNER = 'owner"<b>bold</b>';

// The callbacks given to `page.evaluate` run in the page; this file compiles without the DOM library.
interface El {
  dataset: Record<string, string | undefined>;
  children: ArrayLike<El>;
  textContent: string | null;
}
declare const document: {
  querySelectorAll(selector: string): Iterable<El> & ArrayLike<El>;
  querySelector(selector: string): El | null;
  getElementById(id: string): El | null;
  body: El;
};

describeServer(
  'leasehold dashboard, in headless Chromium, over a running fleet',
  chromiumMissing,
  () => {
    const dir = tempDir('leasehold-dashboard-');
    const file = join(dir.path, 'fleet.db');
    const workers = new Map<string, ChildProcess>();
    let store: SqliteStore;
    let cli: StartedCli;
    let browser: Browser;
    let page: Page;
    /** Script errors and Content-Security-Policy refusals in the page. */
    const pageErrors: string[] = [];

    const jobs = async (): Promise<LeaseRecord[]> => store.list({ prefix: 'job/', limit: 1000 });

    beforeAll(async () => {
      store = await SqliteStore.open(file);
      await store.tryAcquire(HOSTILE, HOSTILE_OWNER, 600_000);
      await Promise.all(OWNERS.map((owner) => startWorker(owner)));
      cli = startCli([
        'dashboard',
        '--store',
        `sqlite:${file}`,
        '--port',
        '0',
        '--poll',
        '250ms',
        '--admin-token',
        TOKEN,
      ]);
      await waitFor(
        'the dashboard URL',
        () => /http:\/\/127\.0\.0\.1:\d+\//.test(cli.stdout()),
        20_000,
      );
      const url = /http:\/\/127\.0\.0\.1:\d+\//.exec(cli.stdout())![0];
      browser = await launchChromium();
      page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
      page.on('pageerror', (error) => pageErrors.push(error.message));
      page.on('console', (message) => {
        if (/Content.Security.Policy/i.test(message.text())) pageErrors.push(message.text());
      });
      await page.goto(url);
      await page.waitForSelector('body[data-ready="1"]');
    }, 60_000);

    afterAll(async () => {
      await browser?.close();
      cli?.child.kill('SIGTERM');
      for (const child of workers.values()) if (child.exitCode === null) child.kill('SIGTERM');
      await Promise.all(
        [...workers.values()].map((c) =>
          c.exitCode === null && c.signalCode === null ? once(c, 'exit') : 0,
        ),
      );
      if (cli) expect(await cli.exit).toBe(0);
      expect(cli?.stdout() + cli?.stderr()).not.toContain(TOKEN);
      await store?.close();
      dir.cleanup();
    });

    async function startWorker(owner: string): Promise<void> {
      const child = spawn(process.execPath, [WORKER, file, owner, String(RESOURCES)], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      workers.set(owner, child);
      const lines = createInterface({ input: child.stdout! });
      for await (const line of lines) {
        const event = JSON.parse(line) as { event: string; message?: string };
        if (event.event === 'error') throw new Error(`worker ${owner}: ${event.message}`);
        if (event.event === 'started') return;
      }
      throw new Error(`worker ${owner} exited before it started`);
    }

    /** What the table shows for each `job/` resource: `[owner, state]`. */
    const shown = (): Promise<Record<string, [string, string]>> =>
      page.evaluate(() => {
        const out: Record<string, [string, string]> = {};
        for (const row of document.querySelectorAll('#rows .row:not([hidden])')) {
          const { resource, owner, state } = row.dataset;
          if (resource?.startsWith('job/')) out[resource] = [owner!, state!];
        }
        return out;
      });

    it('shows the fleet’s leases as the store holds them, and its members against their fair share', async () => {
      await waitFor(
        'the page to show every job held, by the three workers, as the store says',
        async () => {
          const page = await shown();
          const records = await jobs();
          return (
            records.length === RESOURCES &&
            Object.keys(page).length === RESOURCES &&
            records.every(
              (r) => page[r.resource]?.[0] === r.owner && page[r.resource]?.[1] === 'held',
            ) &&
            new Set(records.map((r) => r.owner)).size === OWNERS.length
          );
        },
        25_000,
        100,
      );
      const members = await page.$$eval('#members tr[data-member]', (rows) =>
        rows.map((r) => [
          (r as El).dataset.member,
          r.children[1]!.textContent,
          r.children[2]!.textContent,
        ]),
      );
      expect(members.map((m) => m[0])).toEqual(OWNERS);
      expect(members.reduce((sum, m) => sum + Number(m[1]), 0)).toBe(RESOURCES);
      expect(members.map((m) => Number(m[2]))).toEqual([4, 4, 4]);
      // Names are text, never markup: the hostile record is listed with its name intact, and ran nothing.
      await page.check('#f-internal'); // no effect on it, but the toggle must not break the table
      const hostile = await page.evaluate((name) => {
        const row = [...document.querySelectorAll('#rows .row')].find(
          (r) => r.dataset.resource === name,
        );
        return {
          text: row?.children[0]!.textContent,
          owner: row?.children[1]!.textContent,
          pwned: document.body.dataset.pwned,
          images: document.querySelectorAll('img, b').length, // any <b> would be the owner's name parsed as HTML
        };
      }, HOSTILE);
      expect(hostile).toEqual({ text: HOSTILE, owner: HOSTILE_OWNER, pwned: undefined, images: 0 });
      await page.uncheck('#f-internal');
      // The credentials-free store URL and the poll interval are on the page.
      expect(await page.textContent('#mode')).toContain('polling every 250ms');
    });

    it('shows a SIGKILLed worker’s leases expire, then held by another worker', async () => {
      const victim = 'w1';
      workers.get(victim)!.kill('SIGKILL');
      await once(workers.get(victim)!, 'exit');
      const orphans = (await jobs()).filter((r) => r.owner === victim);
      expect(orphans.length).toBeGreaterThan(0);
      const names = orphans.map((r) => r.resource);
      // Freeze the two survivors across the orphans' expiry (a few hundred ms, well inside their own
      // leases), so the expired state has to show before anyone can take the orphans over.
      const firstExpiry = Math.min(...orphans.map((r) => r.expiresAt));
      await new Promise((r) => setTimeout(r, Math.max(0, firstExpiry - 100 - Date.now())));
      const survivors = OWNERS.filter((o) => o !== victim).map((o) => workers.get(o)!);
      for (const s of survivors) s.kill('SIGSTOP');
      try {
        await page.waitForFunction(
          ([names, victim]) =>
            names.every((name) => {
              const row = [...document.querySelectorAll('#rows .row')].find(
                (r) => r.dataset.resource === name,
              );
              return row?.dataset.owner === victim && row.dataset.state === 'expired';
            }),
          [names, victim] as const,
          { timeout: 2000, polling: 50 },
        );
      } finally {
        for (const s of survivors) s.kill('SIGCONT');
      }
      await waitFor(
        'the orphans to show as held by a surviving worker',
        async () => {
          const now = await shown();
          return names.every(
            (n) => now[n]![1] === 'held' && now[n]![0] !== victim && now[n]![0] !== '',
          );
        },
        20_000,
        100,
      );
      // The fleet panel drops the dead member once its membership lapses, and the event list tells
      // the story: each orphan expired under the victim, then was acquired after it.
      await page.waitForFunction(
        (victim) => !document.querySelector(`#members tr[data-member="${victim}"]`),
        victim,
        {
          timeout: 10_000,
        },
      );
      const events = await page.$$eval('#events li[data-resource]', (items) =>
        items.map((li) => {
          const { type, resource, owner } = (li as El).dataset;
          return { type, resource, owner };
        }),
      );
      for (const name of names) {
        expect(events).toContainEqual({ type: 'expired', resource: name, owner: victim });
        expect(
          events.some((e) => e.type === 'acquired' && e.resource === name && e.owner !== victim),
        ).toBe(true);
      }
      // The timeline has a lane per resource; hovering one shows its holders and tokens.
      const box = (await page.locator('#timeline').boundingBox())!;
      await page.mouse.move(box.x + box.width - 20, box.y + 18 + 16 * 1 + 8); // lane 1: job/00 (lane 0 is the hostile name)
      expect(await page.textContent('#tip')).toMatch(/^job\/00 .*\nowner w\d +token \d+/s);
      mkdirSync(ARTIFACTS, { recursive: true });
      const shot = join(ARTIFACTS, 'fleet-after-sigkill.png');
      await page.screenshot({ path: shot, fullPage: true });
      expect(statSync(shot).size).toBeGreaterThan(10_000);
    });

    it('force-releases a lease only for a request carrying the admin token', async () => {
      const target = (await jobs()).find((r) => r.owner !== '' && r.owner !== 'w1')!;
      const post = (headers: Record<string, string>): Promise<number> =>
        page.evaluate(
          async ([body, headers]) =>
            (
              await fetch('/api/release', {
                method: 'POST',
                headers: { 'Content-Type': 'application/json', ...headers },
                body,
              })
            ).status,
          [JSON.stringify({ resource: target.resource, token: target.token }), headers] as const,
        );
      expect(await post({})).toBe(403);
      expect(await post({ 'X-Leasehold-Admin-Token': 'wrong' })).toBe(403);
      expect(await post({ Authorization: `Bearer ${TOKEN}x` })).toBe(403);
      const untouched = (await store.get(target.resource))!;
      expect([untouched.owner, untouched.token]).toEqual([target.owner, target.token]);
      // Through the page: the button asks for the token, and the release lands.
      page.once('dialog', (dialog) => void dialog.accept(TOKEN));
      await page.locator(`#rows .row[data-resource="${target.resource}"] button.release`).click();
      await page.waitForFunction(() =>
        document.getElementById('status')!.textContent!.startsWith('released'),
      );
      const after = (await store.get(target.resource))!;
      expect(after.owner === '' || after.token > target.token).toBe(true);
      await page.waitForSelector(
        `#events li[data-type="released"][data-resource="${target.resource}"][data-token="${target.token}"]`,
      );
      await waitFor('the force release to be logged', () =>
        cli.stderr().includes('force-released "job/'),
      );
    });
  },
);
