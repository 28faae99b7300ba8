import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slotOwner } from '../../src/client/fair-line.js';
import { permitResource } from '../../src/core/permits.js';
import { SqliteStore } from '../../src/index.js';
import { tempDir, waitFor } from '../harness/processes.js';
import { MAIN, runCli, type CliResult } from './run-cli.js';

// Counting leases in the CLI: `acquire --permits`, `release --permit`, and a name's permits shown
// together by `list`, `get` and `watch`, on SQLite store files.

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\0-\x08\x0b-\x1f\x7f-\x9f]/u;

const dir = tempDir('leasehold-permits-');
let n = 0;
/** A fresh SQLite store file: its URL, and the store opened on it for setting records up. */
async function freshStore(): Promise<{ url: string; store: SqliteStore }> {
  const file = join(dir.path, `permits-${++n}.db`);
  return { url: `sqlite:${file}`, store: await SqliteStore.open(file) };
}
const opened: SqliteStore[] = [];
const cli = (...args: string[]): Promise<CliResult> => runCli(args, { cwd: dir.path });

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npx tsc -p tsconfig.build.json`);
});
afterAll(async () => {
  for (const store of opened) await store.close();
  dir.cleanup();
});

/** The first three columns of each row of `list` output, below its header. */
function firstColumns(stdout: string): string[][] {
  return stdout
    .trimEnd()
    .split('\n')
    .slice(1)
    .map((line) => line.split(/\s{2,}/).slice(0, 3));
}

/** Takes permits `permits` of `name` for `owner` straight on the store. */
async function hold(store: SqliteStore, name: string, permits: number[], owner: string) {
  for (const p of permits)
    expect(await store.tryAcquire(permitResource(name, p), owner, 60_000)).not.toBeNull();
}

describe('list and get', () => {
  it('list shows the permits of two names grouped after each name, in number order, without control characters', async () => {
    const { url, store } = await freshStore();
    opened.push(store);
    await hold(store, 'api', [0, 2, 10, 1], 'w-api');
    await hold(store, 'db', [3, 0], 'w-db');
    await hold(store, 'api-other', [0], 'solo');
    const { code, stdout, stderr } = await cli('list', '--store', url);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).not.toMatch(CONTROL);
    expect(stdout).not.toContain('\\x01');
    const rows = stdout
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((line) => line.split(/\s{2,}/).slice(0, 3));
    expect(rows).toEqual([
      ['api', 'permit 0', 'w-api'],
      ['api', 'permit 1', 'w-api'],
      ['api', 'permit 2', 'w-api'],
      ['api', 'permit 10', 'w-api'],
      ['api-other', 'solo', '1'],
      ['db', 'permit 0', 'w-db'],
      ['db', 'permit 3', 'w-db'],
    ]);

    const json = await cli('list', '--store', url, '--json');
    const { leases } = JSON.parse(json.stdout) as { leases: Record<string, unknown>[] };
    expect(leases.map((l) => [l.resource, l.name, l.permit])).toEqual([
      ['api', 'api', 0],
      ['api\u0001permit=1', 'api', 1],
      ['api\u0001permit=2', 'api', 2],
      ['api\u0001permit=10', 'api', 10],
      ['api-other', 'api-other', 0],
      ['db', 'db', 0],
      ['db\u0001permit=3', 'db', 3],
    ]);
    // The fields that were there before are unchanged.
    expect(leases[1]).toMatchObject({ owner: 'w-api', token: 1, state: 'held' });
    expect(Object.keys(leases[1]!)).toEqual([
      'resource',
      'name',
      'permit',
      'owner',
      'token',
      'expiresAt',
      'state',
      'expiresInMs',
    ]);
  });

  it('get of a name with 3 permits held shows all 3; --json lists them under "permits"', async () => {
    const { url, store } = await freshStore();
    opened.push(store);
    await hold(store, 'pool', [0, 1, 2], 'w');
    await hold(store, 'pool-b', [0, 1], 'x'); // another name sharing the prefix is not shown
    const { code, stdout, stderr } = await cli('get', 'pool', '--store', url);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).not.toMatch(CONTROL);
    expect(stdout).toMatch(/^"pool": 3 permit records, 3 held$/m);
    expect(stdout.match(/^pool {2}permit \d +w +1 +held /gm)).toHaveLength(3);
    expect(stdout).not.toContain('pool-b');

    const json = JSON.parse((await cli('get', 'pool', '--store', url, '--json')).stdout) as {
      permits: { resource: string; permit: number; state: string }[];
    };
    expect(json).toMatchObject({ resource: 'pool', name: 'pool', permit: 0, owner: 'w' });
    expect(json.permits.map((p) => [p.permit, p.state])).toEqual([
      [0, 'held'],
      [1, 'held'],
      [2, 'held'],
    ]);

    // Another name with permits, read on its own.
    const plain = await cli('get', 'pool-b', '--store', url);
    expect(plain.stdout).toMatch(/^"pool-b": 2 permit records, 2 held$/m);
  });

  it('fair-line records are left out unless --fair-line, which shows them as places of the name', async () => {
    const { url, store } = await freshStore();
    opened.push(store);
    await hold(store, 'job', [0], 'holder');
    await store.tryAcquire('job\u0001queue=007', slotOwner(9, 'second'), 60_000);
    await store.tryAcquire('job\u0001queue=100', slotOwner(4, 'first'), 60_000);
    const ticket = (await store.tryAcquire('job\u0001ticket', 'first', 60_000))!;
    await store.release(ticket);

    const plain = await cli('list', '--store', url);
    expect(plain.code).toBe(0);
    expect(plain.stdout.trimEnd().split('\n')).toHaveLength(2);
    expect(plain.stderr).toBe('leasehold: 3 fair-line records not shown; --fair-line shows them\n');

    const all = await cli('list', '--store', url, '--fair-line');
    expect(all.stdout).not.toMatch(CONTROL);
    const rows = firstColumns(all.stdout);
    expect(rows).toEqual([
      ['job', 'holder', '1'],
      ['job', '(fair line, place 2)', 'second'],
      ['job', '(fair line, place 1)', 'first'],
      ['job', '(fair line, ticket)', '-'],
    ]);
    const json = JSON.parse(
      (await cli('list', '--store', url, '--fair-line', '--json')).stdout,
    ) as {
      leases: Record<string, unknown>[];
    };
    expect(json.leases[2]).toMatchObject({
      resource: 'job\u0001queue=100',
      name: 'job',
      permit: null,
      fairLine: { kind: 'place', slot: 100, place: 1 },
    });
    const got = await cli('get', 'job', '--store', url, '--fair-line');
    expect(got.stdout).toMatch(/^"job": 1 permit record, 1 held; 2 waiting in its fair line$/m);
  });
});

describe('acquire --permits and release --permit', () => {
  it('takes two permits of two, refuses a third with exit 75, and releases one by --permit', async () => {
    const { url, store } = await freshStore();
    opened.push(store);
    const first = await cli('acquire', 'api', '--permits', '2', '--owner', 'a', '--store', url);
    expect(first).toMatchObject({ code: 0, stderr: '' });
    const permitA = Number(/^acquired permit (\d) of "api" \(one of 2\)$/m.exec(first.stdout)![1]);
    expect(first.stdout).toMatch(/^token: +1$/m);
    expect(first.stdout).toContain(`leasehold release api --permit ${permitA} --owner a --token 1`);

    const second = await cli(
      'acquire',
      'api',
      '--permits',
      '2',
      '--owner',
      'b',
      '--store',
      url,
      '--json',
    );
    expect(second.code).toBe(0);
    const b = JSON.parse(second.stdout) as Record<string, unknown>;
    expect(b).toMatchObject({ name: 'api', permit: 1 - permitA, permits: 2, owner: 'b', token: 1 });
    expect(b.resource).toBe(permitResource('api', 1 - permitA));

    const third = await cli('acquire', 'api', '--permits', '2', '--owner', 'c', '--store', url);
    expect(third.code).toBe(75);
    expect(third.stdout).toBe('');
    expect(third.stderr).toMatch(
      /^leasehold: LEASE_UNAVAILABLE: all 2 permits of "api" are held, by "[ab]", "[ab]"; the first to lapse expires /,
    );
    const thirdJson = await cli(
      'acquire',
      'api',
      '--permits',
      '2',
      '--owner',
      'c',
      '--store',
      url,
      '--json',
    );
    expect(thirdJson.code).toBe(75);
    expect(JSON.parse(thirdJson.stdout)).toMatchObject({
      error: { code: 'LEASE_UNAVAILABLE', exitCode: 75 },
    });

    // Release b's permit by number; the wrong token is refused first.
    const pb = String(1 - permitA);
    const wrong = await cli(
      'release',
      'api',
      '--permit',
      pb,
      '--owner',
      'b',
      '--token',
      '2',
      '--store',
      url,
    );
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('is not held by "b" with token 2');
    const released = await cli(
      'release',
      'api',
      '--permit',
      pb,
      '--owner',
      'b',
      '--token',
      '1',
      '--store',
      url,
      '--json',
    );
    expect(released.code).toBe(0);
    expect(JSON.parse(released.stdout)).toEqual({
      resource: permitResource('api', 1 - permitA),
      name: 'api',
      permit: 1 - permitA,
      owner: 'b',
      token: 1,
      released: true,
    });
    expect((await store.get(permitResource('api', 1 - permitA)))!.owner).toBe('');

    // Now the third caller gets the freed permit, with the next token.
    const again = await cli('acquire', 'api', '--permits', '2', '--owner', 'c', '--store', url);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`permit:  ${1 - permitA} (of 2, numbered from 0)`);
    expect(again.stdout).toMatch(/^token: +2$/m);
  });

  it('validates --permits as run does, and refuses a name too long for its permits', async () => {
    const { url, store } = await freshStore();
    opened.push(store);
    for (const bad of ['0', '1001', 'x']) {
      const r = await cli('acquire', 'api', '--permits', bad, '--owner', 'a', '--store', url);
      expect(r.code, bad).toBe(2);
      expect(r.stderr).toContain(`option '--permits <n>' argument '${bad}' is invalid`);
    }
    const long = 'n'.repeat(510);
    const r = await cli(
      'acquire',
      long,
      '--permits',
      '3',
      '--owner',
      'a',
      '--store',
      url,
      '--json',
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^leasehold: INVALID_ARGUMENT: resource is too long for 3 permits/);
    expect(JSON.parse(r.stdout)).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
    const badPermit = await cli(
      'release',
      'api',
      '--permit',
      '-1',
      '--owner',
      'a',
      '--token',
      '1',
      '--store',
      url,
    );
    expect(badPermit.code).toBe(2);
  });
});

describe('watch', () => {
  /** `leasehold watch` piped, with no colour. */
  function watch(url: string, args: string[]) {
    const env = { ...process.env };
    delete env.LEASEHOLD_STORE;
    delete env.FORCE_COLOR;
    delete env.NO_COLOR;
    const child = spawn(
      process.execPath,
      [MAIN, 'watch', '--store', url, '--poll', '200ms', ...args],
      {
        env,
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exit = new Promise<number | null>((resolve) =>
      child.once('close', (code) => resolve(code)),
    );
    return { child, stdout: () => stdout, stderr: () => stderr, exit };
  }

  it('shows a permit acquisition with its permit number, plain and --json', async () => {
    const { url, store } = await freshStore();
    opened.push(store);
    await hold(store, 'api', [0], 'w0');
    await store.tryAcquire('api\u0001queue=001', slotOwner(1, 'waiter'), 60_000);
    const plain = watch(url, []);
    const json = watch(url, ['--json']);
    try {
      await waitFor(
        'the first listings',
        () =>
          /\sseen\s+api {2}owner=w0 token=1$/m.test(plain.stdout()) &&
          json.stdout().includes('"seen"'),
      );
      await hold(store, 'api', [3], 'w3');
      await waitFor(
        'the permit acquisition',
        () =>
          /\sacquired\s+api {2}permit 3 {2}owner=w3 token=1$/m.test(plain.stdout()) &&
          json.stdout().includes('"type":"acquired"'),
      );
    } finally {
      plain.child.kill('SIGTERM');
      json.child.kill('SIGTERM');
    }
    expect(await plain.exit).toBe(0);
    expect(await json.exit).toBe(0);
    expect(plain.stdout()).not.toMatch(CONTROL);
    expect(plain.stdout()).not.toContain('fair line');
    const events = json
      .stdout()
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(events.find((e) => e.type === 'acquired')).toMatchObject({
      resource: 'api\u0001permit=3',
      name: 'api',
      permit: 3,
      owner: 'w3',
      token: 1,
    });
    expect(events.some((e) => String(e.resource).includes('queue'))).toBe(false);
  });

  it("list keeps an election's candidate registrations out of sight unless --fair-line, then shows their priorities", async () => {
    const { url, store } = await freshStore();
    opened.push(store);
    await store.tryAcquire('election/sched', 'b', 60_000);
    await store.tryAcquire('election/sched\u0001candidate=2:b', 'b', 60_000);
    await store.tryAcquire('election/sched\u0001candidate=1.5:a', 'a', 60_000);

    const plain = await cli('list', '--store', url);
    expect(plain.code).toBe(0);
    expect(plain.stdout.trimEnd().split('\n')).toHaveLength(2);
    expect(plain.stderr).toBe(
      'leasehold: 2 election candidate registrations not shown; --fair-line shows them\n',
    );
    const all = await cli('list', '--store', url, '--fair-line');
    expect(all.stdout).not.toMatch(CONTROL);
    const rows = firstColumns(all.stdout);
    expect(rows).toEqual([
      ['election/sched', 'b', '1'],
      ['election/sched', '(candidate, priority 2)', 'b'],
      ['election/sched', '(candidate, priority 1.5)', 'a'],
    ]);
  });
});
