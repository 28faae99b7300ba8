import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/index.js';
import { rejection } from '../harness/expect-error.js';
import { tempDir } from '../harness/processes.js';

// One rule for every store: anything wrong in the URL (an unknown parameter, a repeated one, a
// value of the wrong form or out of range) is STORE_URL_INVALID naming the parameter, never
// showing the password, and found before anything connects. Nothing listens on port 1, so a
// store that tried to connect would answer STORE_UNAVAILABLE instead.

const dir = tempDir();
afterAll(() => dir.cleanup());

interface Case {
  /** A valid URL of the store, with `pw1` as its password where it takes one. */
  readonly base: string;
  /** A parameter the store accepts, with a valid value. */
  readonly param: readonly [string, string];
  /** Parameters with a bad value: `[name, value]`. */
  readonly bad: readonly (readonly [string, string])[];
}

const sqliteFile = join(dir.path, 'leases.db');

const cases: Record<string, Case> = {
  memory: {
    base: 'memory:',
    param: ['maxClockSkewMs', '5'],
    bad: [
      ['maxClockSkewMs', 'soon'],
      ['maxClockSkewMs', '99999999999'],
    ],
  },
  sqlite: {
    base: `sqlite:${sqliteFile}`,
    param: ['table', 'leases'],
    bad: [
      ['table', 'x;drop'],
      ['busyTimeoutMs', '1e3'],
      ['watchPollMs', '0'],
      ['synchronous', 'off'],
    ],
  },
  postgres: {
    base: 'postgres://u:pw1@127.0.0.1:1/db',
    param: ['table', 'leases'],
    bad: [
      ['table', 'x;drop'],
      ['schema', ''],
      ['poolSize', '0'],
      ['notify', 'yes'],
    ],
  },
  mysql: {
    base: 'mysql://u:pw1@127.0.0.1:1/db',
    param: ['table', 'leases'],
    bad: [
      ['table', 'x;drop'],
      ['queryTimeoutMs', '0'],
      ['poolSize', '-1'],
    ],
  },
  mariadb: {
    base: 'mariadb://u:pw1@127.0.0.1:1/db',
    param: ['table', 'leases'],
    bad: [['poolSize', '5000']],
  },
  redis: {
    base: 'redis://u:pw1@127.0.0.1:1',
    param: ['prefix', 'lh:'],
    bad: [
      ['prefix', 'x;drop'],
      ['shards', '0'],
      ['commandTimeoutMs', '0'],
      ['sentinel', 'my master'],
      ['sentinels', '127.0.0.1:2'],
      ['cluster', 'yes&sentinel=m'],
    ],
  },
  dynamodb: {
    base: 'dynamodb://leases?region=us-east-1&endpoint=http://127.0.0.1:1',
    param: ['maxClockSkewMs', '500'],
    bad: [
      ['concurrency', '999'],
      ['requestTimeoutMs', '10'],
      ['createTable', 'yes'],
      ['fastPath', 'off'],
    ],
  },
  etcd: {
    base: 'etcd://u:pw1@127.0.0.1:1',
    param: ['prefix', '/lh/'],
    bad: [
      ['prefix', '%00'],
      ['maxTxnOps', '3'],
      ['timeoutMs', '0'],
    ],
  },
};

/** `base` with `query` added to its parameters. */
const withQuery = (base: string, query: string): string =>
  `${base}${base.includes('?') ? '&' : '?'}${query}`;

async function refused(url: string, named: string): Promise<string> {
  const error = await rejection(openStore(url), 10_000);
  expect(error.code, `${url}: ${error.message}`).toBe('STORE_URL_INVALID');
  expect(error.message, url).toContain(named);
  expect(error.message, url).not.toContain('pw1');
  return error.message;
}

describe.each(Object.entries(cases))('%s: URLs', (_scheme, { base, param, bad }) => {
  const [name, value] = param;

  it('refuses a repeated parameter, naming it', async () => {
    const url = withQuery(base, `${name}=${value}&${name}=${value}`);
    expect(await refused(url, `"${name}"`)).toContain('is given 2 times');
  });

  it('refuses an unknown parameter, naming it', async () => {
    expect(await refused(withQuery(base, 'tabel=x'), '"tabel"')).toContain('unknown parameter');
  });

  it('refuses a parameter holding a password without showing it', async () => {
    await refused(withQuery(base, 'password=pw1'), '"password"');
  });

  it.each(bad)('refuses %s=%s, naming the parameter', async (key, bad) => {
    await refused(withQuery(base, `${key}=${bad}`), key);
  });
});

describe('stores without a server', () => {
  it('open with a valid parameter', async () => {
    for (const scheme of ['memory', 'sqlite'] as const) {
      const [name, value] = cases[scheme]!.param;
      const store = await openStore(withQuery(cases[scheme]!.base, `${name}=${value}`));
      await store.close();
    }
  });

  it('a refused sqlite URL creates no file', async () => {
    const file = join(dir.path, 'refused.db');
    await refused(`sqlite:${file}?table=x;drop`, 'table');
    await refused(`sqlite:${file}?table=a&table=b`, 'table');
    expect(existsSync(file)).toBe(false);
  });
});
