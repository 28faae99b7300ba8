import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/index.js';
import { parseStoreUrl, redact } from '../../src/core/store-url.js';
import { rejection } from '../harness/expect-error.js';

// Malformed store URLs whose password a parser aimed at well-formed URLs would miss. Every
// message must still say what is wrong without quoting the password, or any part of it. Nothing
// listens on 127.0.0.1 port 1, so a URL that does parse fails to connect instead.

const SECRET = 'pw1SECRET';

/** `[url, what the message names]`: the password is always `SECRET`, or split around a character. */
const MALFORMED: readonly (readonly [string, RegExp])[] = [
  ['postgres:/user:pw1SECRET@127.0.0.1:1/db', /not a PostgreSQL URL/],
  ['postgres:user:pw1SECRET@127.0.0.1:1/db', /not a PostgreSQL URL/],
  ['redis:/u:pw1SECRET@127.0.0.1:1', /expected redis:\/\/host:port/],
  ['postgres://user:pw1?SECRET@127.0.0.1:1/db', /not a PostgreSQL URL/],
  ['postgres://user:pw1#SECRET@127.0.0.1:1/db', /not a PostgreSQL URL/],
  ['postgres://user:pw1?a=SECRET@127.0.0.1:1/db', /not a PostgreSQL URL/],
  ['mysql://u:pw1/SECRET@127.0.0.1:1/db', /mysql: store URL is not a valid URL/],
  ['mysql://u:pw1?SECRET@127.0.0.1:1/db', /mysql: store URL is not a valid URL/],
  ['redis://u:pw1#SECRET@127.0.0.1:1', /malformed host, port or credentials/],
  ['etcd://u:pw1?SECRET@127.0.0.1:1', /cannot reach etcd at etcd:\/\/u:\*\*\*@127\.0\.0\.1:1/],
  ['postgress://user:pw1SECRET@127.0.0.1:1/db', /unknown store scheme "postgress:"/],
  ['postgres://us er:pw1 SECRET@127.0. 0.1:1/db', /not a PostgreSQL URL/],
  ['postgres://user:pw1SECRET@127.0.0.1:1 /db', /not a PostgreSQL URL/],
  [' postgres://user:pw1SECRET@127.0.0.1:1/db', /has no scheme/],
  ['user:pw1SECRET@127.0.0.1:1/db', /unknown store scheme "user:"/],
  // A `:` typed as `@`: an `@` in the user info is malformed, and what follows it may be a password.
  ['redis://user@pw1SECRET@127.0.0.1:1', /redis:\/\/user@\*\*\*@127\.0\.0\.1:1/],
  ['user@pw1SECRET@127.0.0.1:1/db', /has no scheme/],
];

/** The secret, and each part of it a malformed URL splits it into. */
function secretParts(url: string): string[] {
  const parts = [SECRET, 'SECRET'];
  return url.includes(SECRET) ? parts : [...parts, 'pw1?', 'pw1#', 'pw1/', 'pw1 ', 'pw1:'];
}

describe('store URL secrets in messages', () => {
  it.each(MALFORMED)('openStore(%j) names the problem without the password', async (url, names) => {
    const error = await rejection(openStore(url));
    const text = `${error.message} ${String((error.cause as Error | undefined)?.message ?? '')}`;
    for (const part of secretParts(url)) expect(error.message).not.toContain(part);
    expect(text.includes(SECRET)).toBe(false);
    expect(error.message).toMatch(names);
  });

  it.each(MALFORMED)('redact(%j) hides the whole password', (url) => {
    const redacted = redact(url);
    expect(redacted).not.toContain('SECRET');
    expect(redacted).toContain('***');
  });

  it.each([
    'postgres://user@pw1SECRET@127.0.0.1:1/db',
    'postgres://user@pw1:SECRET@127.0.0.1:1/db',
  ])('a store opened from %j fails its first call without the password', async (url) => {
    const store = await openStore(url);
    try {
      const error = await rejection(store.list());
      for (const part of secretParts(url)) expect(error.message).not.toContain(part);
      expect(error.message).toContain('postgres://user@***@127.0.0.1:1/db');
    } finally {
      await store.close();
    }
  });

  it('still reads the query of a URL with an unencoded "?" in its password', () => {
    const url = parseStoreUrl('postgres://user:pw1?SECRET@127.0.0.1:1/db?table=t');
    expect(url.rest).toBe('//user:pw1?SECRET@127.0.0.1:1/db');
    expect(Object.fromEntries(url.params)).toEqual({ table: 't' });
    expect(url.redacted).toBe('postgres://user:***@127.0.0.1:1/db?table=t');
  });

  it('leaves URLs without credentials alone', () => {
    for (const url of [
      'sqlite:./a@b.db',
      'postgres://user@h/db',
      'redis://127.0.0.1:6379/0?prefix=a',
      'memory:',
    ]) {
      expect(redact(url)).toBe(url);
    }
  });
});
