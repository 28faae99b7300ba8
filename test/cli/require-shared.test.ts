import { describe, expect, it } from 'vitest';
import { CliFailure } from '../../src/cli/output.js';
import { requireShared } from '../../src/cli/store.js';
import { runCli } from './run-cli.js';

const NEEDS = 'use a store other processes share';

/** Spellings that better-sqlite3 opens in memory (`:memory:` once trimmed) or as a private temporary file (empty once trimmed). */
const PRIVATE = [
  'memory:',
  'sqlite::memory:',
  'SQLITE::memory:?table=t',
  'sqlite://:memory:',
  'sqlite://%3Amemory%3A',
  'sqlite: :memory:',
  'sqlite::memory: ',
  'sqlite:\t:memory:',
  'sqlite: ',
  'sqlite:// ',
];

/** Files on disk that other processes can open too, however odd their names. */
const SHARED = [
  'sqlite:./leasehold.db',
  'sqlite:///tmp/leases.db',
  'sqlite:file::memory:',
  'sqlite:/tmp/:memory:',
  'sqlite:%3Amemory%3A',
  'postgres://u:pw@127.0.0.1:5432/db',
];

describe('requireShared', () => {
  it.each(PRIVATE)('refuses %j, a store only this process sees', (url) => {
    let refused: unknown;
    try {
      requireShared(url, NEEDS);
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(CliFailure);
    expect((refused as CliFailure).exitCode).toBe(2);
    expect((refused as CliFailure).message).toMatch(/lives inside one process; use a store other/);
  });

  it.each(SHARED)('passes %j through', (url) => {
    expect(requireShared(url, NEEDS)).toBe(url);
  });
});

describe('leasehold run on a spelling of an in-memory store', () => {
  it('refuses it before running the command', async () => {
    const result = await runCli([
      'run',
      'job',
      '--store',
      'sqlite://:memory:',
      '--',
      'echo',
      'RAN',
    ]);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/lives inside one process/);
  });
});
