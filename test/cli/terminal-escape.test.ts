import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/index.js';
import { tempDir } from '../harness/processes.js';
import { MAIN, runCli } from './run-cli.js';

// Resource and owner names may hold any character but NUL. Whoever can take a lease must not be
// able to drive an operator's terminal (colours, title, cursor moves), reorder text with bidi
// overrides, or forge table rows with line breaks: human output shows such characters escaped.

/** `[name as stored, as shown]`. */
const NAMES = [
  ['\x1b[31mred', '\\x1b[31mred'],
  ['a\nb', 'a\\nb'],
  ['\u202eevil', '\\u202eevil'],
  ['back\\slash', 'back\\\\slash'],
  ['bel\x07\b\rx', 'bel\\x07\\x08\\rx'],
  ['c1\x9b2J', 'c1\\x9b2J'],
  ['iso\u2066late\u2069', 'iso\\u2066late\\u2069'],
] as const;

/** What must never reach a terminal raw. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const RAW = /[\0-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/u;

const dir = tempDir('leasehold-escape-');
const store = `sqlite:${join(dir.path, 'x.db')}`;

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build`);
  const leases = await openStore(store);
  for (const [name] of NAMES) {
    expect(await leases.tryAcquire(`job-${name}`, `owner-${name}`, 60_000)).not.toBeNull();
  }
  await leases.close();
});

afterAll(() => dir.cleanup());

describe('names from the store in human output', () => {
  it('list escapes them, one row per record', async () => {
    const { code, stdout, stderr } = await runCli(['list', '--store', store]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).not.toMatch(RAW);
    const lines = stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(1 + NAMES.length);
    for (const [, shown] of NAMES) {
      const row = lines.find((line) => line.startsWith(`job-${shown} `));
      expect(row, shown).toBeDefined();
      expect(row).toContain(`owner-${shown} `);
    }
  });

  it.each(NAMES)('get %j escapes resource and owner', async (name, shown) => {
    const { code, stdout, stderr } = await runCli(['get', `job-${name}`, '--store', store]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).not.toMatch(RAW);
    expect(stdout).toMatch(new RegExp(`^resource: +${escapeRegExp(`job-${shown}`)}$`, 'm'));
    expect(stdout).toMatch(new RegExp(`^owner: +${escapeRegExp(`owner-${shown}`)}$`, 'm'));
  });

  it('escapes names in error lines', async () => {
    const missing = await runCli(['get', '\x1b]0;title\x07\u202e', '--store', store]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).not.toMatch(RAW);
    expect(missing.stderr).toContain('no lease record for "\\x1b]0;title\\x07\\u202e"');

    const [name, shown] = NAMES[0];
    const taken = await runCli(['acquire', `job-${name}`, '--owner', 'b', '--store', store]);
    expect(taken.code).toBe(75); // held by another owner
    expect(taken.stdout).toBe('');
    expect(taken.stderr).not.toMatch(RAW);
    expect(taken.stderr).toContain(`lease on "job-${shown}" is held by "owner-${shown}"`);
  });

  it('acquire escapes what it prints, and quotes the release command for a shell', async () => {
    const { code, stdout } = await runCli([
      'acquire',
      'new\x1b[2J',
      '--owner',
      'o\u202e',
      '--store',
      store,
    ]);
    expect(code).toBe(0);
    expect(stdout).not.toMatch(RAW);
    expect(stdout).toContain('acquired "new\\x1b[2J"');
    expect(stdout).toContain("leasehold release $'new\\x1b[2J' --owner $'o\\u202e' --token 1");
  });

  it('--json keeps the names exact', async () => {
    const { code, stdout } = await runCli(['list', '--store', store, '--json']);
    expect(code).toBe(0);
    const resources = (JSON.parse(stdout) as { leases: { resource: string }[] }).leases.map(
      (l) => l.resource,
    );
    for (const [name] of NAMES) expect(resources).toContain(`job-${name}`);
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
