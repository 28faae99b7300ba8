import { afterAll, beforeAll, expect, it } from 'vitest';
import { startDynalite, type DynaliteServer } from '../harness/dynalite-server.js';
import { tempDir } from '../harness/processes.js';
import { runCli } from './run-cli.js';

const leasehold = (...args: string[]) => runCli(args);

let dynalite: DynaliteServer;
const dir = tempDir('leasehold-init-');
beforeAll(async () => {
  dynalite = await startDynalite();
});
afterAll(async () => {
  await dynalite.stop();
  dir.cleanup();
});

it('init creates a DynamoDB table that opening alone refuses to create, and is safe to repeat', async () => {
  const url = dynalite.url('leases_init');
  const before = await leasehold('list', '--store', url);
  expect(before.code).toBe(1);
  expect(before.stderr).toMatch(/STORE_UNAVAILABLE/);
  for (let i = 0; i < 2; i++) {
    const made = await leasehold('init', '--store', url);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toContain('ready');
  }
  const acquired = await leasehold(
    'acquire',
    'job',
    '--owner',
    'a',
    '--ttl',
    '5s',
    '--store',
    url,
    '--json',
  );
  expect(JSON.parse(acquired.stdout)).toMatchObject({ resource: 'job', owner: 'a', token: 1 });
}, 30_000);

it('init on SQLite creates the file and schema', async () => {
  const url = `sqlite:${dir.path}/init.db`;
  const made = await leasehold('init', '--store', url, '--json');
  expect(made.code).toBe(0);
  expect(JSON.parse(made.stdout)).toEqual({ ready: true, clock: 'local' });
  const listed = await leasehold('list', '--store', url, '--json');
  expect(JSON.parse(listed.stdout).leases).toEqual([]);
});
