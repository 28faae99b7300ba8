import { request } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startDashboard, type Dashboard } from '../../src/cli/dashboard/server.js';
import { SqliteStore } from '../../src/index.js';
import type { Snapshot } from '../../src/cli/dashboard/wire.js';

// The dashboard's HTTP surface, without a browser: what it serves, and what it refuses.

let store: SqliteStore;
let open: Dashboard;
let admin: Dashboard;

beforeAll(async () => {
  store = await SqliteStore.open(':memory:');
  await store.tryAcquire('a/1', 'w1', 60_000);
  open = await startDashboard({
    store,
    storeUrl: 'postgres://app:s3cret@127.0.0.1:5432/db',
    port: 0,
    pollMs: 100,
    metrics: (_request, response) => {
      response.writeHead(200, { 'Content-Type': 'text/plain' });
      response.end('leasehold_test_total 1\n');
    },
  });
  admin = await startDashboard({ store, port: 0, pollMs: 100, adminToken: 'tok' });
});

afterAll(async () => {
  await open?.close();
  await admin?.close();
  await store?.close();
});

function get(
  url: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, url),
      { method: options.method ?? 'GET', headers: options.headers },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

it('listens on 127.0.0.1 by default and serves one self-contained page without the store password', async () => {
  expect(new URL(open.url).hostname).toBe('127.0.0.1');
  const page = await get(open.url, '/');
  expect(page.status).toBe(200);
  expect(page.headers['content-security-policy']).toContain("default-src 'none'");
  expect(page.body).toContain('postgres://app:***@127.0.0.1:5432/db');
  expect(page.body).not.toContain('s3cret');
  expect(page.body).not.toMatch(/<script[^>]+src=|<link[^>]+href=/);
  const state = JSON.parse((await get(open.url, '/api/state')).body) as Snapshot;
  expect(state.records.map((r) => r.slice(0, 3))).toEqual([['a/1', 'w1', 1]]);
  expect(state.settings).toMatchObject({ pollMs: 100, watch: true, admin: false });
  expect(JSON.stringify(state)).not.toContain('s3cret');
});

it('serves /metrics through the handler it was given, else what it observes in the store', async () => {
  expect(await get(open.url, '/metrics')).toMatchObject({
    status: 200,
    body: 'leasehold_test_total 1\n',
  });
  const observed = await get(admin.url, '/metrics');
  expect(observed.status).toBe(200);
  expect(observed.body).toContain('leasehold_observed_leases{state="held"} 1');
  expect(observed.body).toContain('leasehold_observed_leases_by_owner{owner="w1"} 1');
});

it('refuses a Host header that does not name it (DNS rebinding)', async () => {
  expect(
    (await get(open.url, '/api/state', { headers: { Host: 'attacker.example' } })).status,
  ).toBe(403);
  expect((await get(open.url, '/api/state', { headers: { Host: 'localhost:1' } })).status).toBe(
    200,
  );
});

it('force-releases only with the admin token, and never when started without one', async () => {
  const body = JSON.stringify({ resource: 'a/1', token: 1 });
  const post = (url: string, headers: Record<string, string> = {}) =>
    get(url, '/api/release', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body,
    });
  expect((await post(open.url, { 'X-Leasehold-Admin-Token': 'tok' })).status).toBe(403);
  expect((await post(admin.url)).status).toBe(403);
  expect((await post(admin.url, { 'X-Leasehold-Admin-Token': 'tok2' })).status).toBe(403);
  expect((await store.get('a/1'))!.owner).toBe('w1');
  // A stale token is refused: it would release a grant the caller never saw.
  const stale = await get(admin.url, '/api/release', {
    method: 'POST',
    headers: { Authorization: 'Bearer tok' },
    body: JSON.stringify({ resource: 'a/1', token: 7 }),
  });
  expect(stale.status).toBe(409);
  const ok = await post(admin.url, { Authorization: 'Bearer tok' });
  expect([ok.status, JSON.parse(ok.body)]).toEqual([200, { released: true }]);
  expect(await store.get('a/1')).toMatchObject({ owner: '', token: 1 });
});

it('streams a snapshot, then an update for each change', async () => {
  const controller = new AbortController();
  const response = await fetch(new URL('/events', open.url), { signal: controller.signal });
  const reader = response.body!.getReader();
  let text = '';
  const until = async (pattern: RegExp): Promise<void> => {
    while (!pattern.test(text)) {
      const { value, done } = await reader.read();
      if (done) throw new Error('stream ended');
      text += Buffer.from(value).toString();
    }
  };
  await until(/^event: snapshot\ndata: .*\n\n/);
  await store.tryAcquire('a/2', 'w2', 60_000);
  await until(
    /event: update\ndata: .*"type":"acquired","at":\d+,"resource":"a\/2","owner":"w2","token":1/,
  );
  controller.abort();
});
