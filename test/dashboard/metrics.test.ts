import { afterAll, expect, it } from 'vitest';
import { startDashboard } from '../../src/cli/dashboard/server.js';
import { LeaseManager, SqliteStore } from '../../src/index.js';
import { tempDir, waitFor } from '../harness/processes.js';

// /metrics scraped while a fleet runs in this process: what the dashboard observes in the store,
// and the process's own leasehold metrics, checked against what the managers did.

const dir = tempDir('leasehold-dashboard-metrics-');
afterAll(() => dir.cleanup());

/** `name{labels} value` lines of a Prometheus text exposition, as a map. */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

it('counts the fleet it watches: leases by state and owner, transitions, and the managers’ own acquisitions', async () => {
  const file = `${dir.path}/fleet.db`;
  const resources = Array.from({ length: 9 }, (_, i) => `job/${i}`);
  const stores: SqliteStore[] = [];
  const managers: LeaseManager[] = [];
  let acquired = 0;
  for (let i = 0; i < 3; i++) {
    const store = await SqliteStore.open(file);
    stores.push(store);
    const manager = new LeaseManager({
      store,
      owner: `w${i}`,
      resources,
      ttlMs: 1500,
      heartbeatMs: 300,
      reconcileMs: 600,
      settleMs: 100,
    });
    manager.on('acquired', () => acquired++);
    managers.push(manager);
  }
  const watched = await SqliteStore.open(file);
  const dashboard = await startDashboard({ store: watched, port: 0, pollMs: 100 });
  const scrape = async (): Promise<Map<string, number>> => {
    const response = await fetch(new URL('/metrics', dashboard.url));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    return parse(await response.text());
  };
  try {
    await Promise.all(managers.map((m) => m.start()));
    await waitFor('the fleet to hold all 9 and the dashboard to see it', async () => {
      const m = await scrape();
      return (
        managers.reduce((n, w) => n + w.held().length, 0) === 9 &&
        m.get('leasehold_observed_leases{state="held"}') === 9
      );
    });
    let m = await scrape();
    for (const w of managers)
      expect(m.get(`leasehold_observed_leases_by_owner{owner="${w.owner}"}`) ?? 0, w.owner).toBe(
        w.held().length,
      );
    expect(m.get('leasehold_observed_leases{state="expired"}')).toBe(0);
    expect(m.get('leasehold_observed_transitions_total{type="acquired"}')).toBe(9);
    // The process's own metrics: every grant of the managers, their three membership leases too.
    expect(m.get('leasehold_acquire_attempts_total{result="acquired"}')).toBe(acquired + 3);
    expect(m.get('leasehold_leases_held')).toBe(9 + 3);

    // A graceful stop: its leases are released, and the others take them over.
    const leaving = managers[0]!;
    const moved = leaving.held().length;
    expect(moved).toBeGreaterThan(0);
    await leaving.stop();
    await waitFor('the others to take over and the dashboard to see it', async () => {
      const now = await scrape();
      // All three: the dashboard's last poll may still show the fleet before the stop (nine held,
      // some of them the leaver's).
      return (
        managers.slice(1).reduce((n, w) => n + w.held().length, 0) === 9 &&
        now.get('leasehold_observed_leases{state="held"}') === 9 &&
        now.get(`leasehold_observed_leases_by_owner{owner="${leaving.owner}"}`) === undefined
      );
    });
    m = await scrape();
    expect(m.get(`leasehold_observed_leases_by_owner{owner="${leaving.owner}"}`)).toBeUndefined();
    // Each moved lease was seen released, then granted again: a handoff when another owner took
    // it within a few seconds of the release, else a plain acquisition.
    const released = m.get('leasehold_observed_transitions_total{type="released"}') ?? 0;
    const handoffs = m.get('leasehold_observed_transitions_total{type="handoff"}') ?? 0;
    const taken = (m.get('leasehold_observed_transitions_total{type="acquired"}') ?? 0) - 9;
    expect(released).toBe(moved);
    expect(taken + handoffs).toBe(moved);
    expect(m.get('leasehold_acquire_attempts_total{result="acquired"}')).toBe(acquired + 3);
    expect(m.get('leasehold_leases_held')).toBe(9 + 2);
    expect(m.get('leasehold_observed_listing_errors_total')).toBe(0);
  } finally {
    await Promise.allSettled(managers.map((w) => w.stop()));
    await dashboard.close();
    for (const s of [...stores, watched]) await s.close();
  }
}, 40_000);
