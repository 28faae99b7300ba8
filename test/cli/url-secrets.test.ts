import { describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';

// The CLI's view of malformed store URLs: what it prints, on either stream and with --json too,
// names the problem and never the password. Nothing listens on 127.0.0.1 port 1.

const URLS: readonly (readonly [string, RegExp])[] = [
  ['postgres:/user:pw1SECRET@127.0.0.1:1/db', /not a PostgreSQL URL in postgres:\/user:\*\*\*@/],
  ['postgres://user:pw1?SECRET@127.0.0.1:1/db', /not a PostgreSQL URL/],
  ['postgres://user:pw1#SECRET@127.0.0.1:1/db', /not a PostgreSQL URL/],
  ['mysql://u:pw1/SECRET@127.0.0.1:1/db', /not a valid URL/],
  ['redis:/u:pw1SECRET@127.0.0.1:1', /expected redis:\/\/host:port/],
  ['postgress://user:pw1SECRET@127.0.0.1:1/db', /unknown store scheme "postgress:"/],
  ['postgres://us er:pw1 SECRET@127.0. 0.1:1/db', /not a PostgreSQL URL/],
];

describe('leasehold with a malformed store URL', () => {
  it.each(URLS)('list --store %j hides the password', async (url, names) => {
    for (const json of [[], ['--json']]) {
      const { code, stdout, stderr } = await runCli(['list', '--store', url, ...json]);
      expect(code).toBe(1);
      expect(stdout + stderr).not.toContain('SECRET');
      expect(stderr).toMatch(/^leasehold: STORE_URL_INVALID: /);
      expect(stderr).toMatch(names);
    }
  });

  it('hides it from get and acquire too', async () => {
    const url = 'postgres:user:pw1SECRET@127.0.0.1:1/db';
    for (const args of [
      ['get', 'job'],
      ['acquire', 'job', '--owner', 'a'],
    ]) {
      const { code, stdout, stderr } = await runCli([...args, '--store', url]);
      expect(code).toBe(1);
      expect(stdout + stderr).not.toContain('SECRET');
      expect(stderr).toMatch(/not a PostgreSQL URL in postgres:user:\*\*\*@/);
    }
  });
});
