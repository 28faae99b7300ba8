import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient, MemoryStore } from '../../src/index.js';
import { checkTtlFits } from '../../src/cli/ttl-fit.js';
import { tempDir } from '../harness/processes.js';
import { runCli } from './run-cli.js';

let dir: ReturnType<typeof tempDir>;
let store: string;

beforeAll(() => {
  dir = tempDir('leasehold-cli-ttl-');
  store = `sqlite:${join(dir.path, 'ttl.db')}`;
});

afterAll(() => dir.cleanup());

/** SQLite allows 50 ms of clock skew by default, so a lease renewed every TTL/4 needs 106 ms. */
const TOO_SHORT =
  "leasehold: --ttl 100ms is too short for this store's clock-skew allowance of 50ms: use --ttl 106ms or more, or lower maxClockSkewMs in the store URL if the clocks of every process using it agree that closely\n";

describe('--ttl against the store it is used on', () => {
  it('refuses a --ttl the store cannot take as a usage error naming what to change, on every command', async () => {
    const commands = [
      ['acquire', 'job', '--owner', 'a', '--ttl', '100ms', '--store', store],
      ['run', 'job', '--ttl', '100ms', '--store', store, '--', 'true'],
      ['tour', '--ttl', '100ms', '--store', store],
    ];
    for (const args of commands) {
      const result = await runCli(args, { cwd: dir.path });
      expect(result, args[0]).toMatchObject({ code: 2, stdout: '', stderr: TOO_SHORT });
    }
  });

  it('accepts the TTL it suggests', async () => {
    // 106 ms leaves about 55 ms for the store's answer; a commit on a busy disk can take longer,
    // and such a grant is given back. --wait lets the command try again rather than flake.
    const result = await runCli(
      ['acquire', 'job', '--owner', 'a', '--ttl', '106ms', '--wait', '5s', '--store', store],
      { cwd: dir.path },
    );
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(/^acquired "job"\n/);
  });

  it('says when the default is what does not fit, for the demo too', async () => {
    const skewed = `${store}?maxClockSkewMs=1000`;
    const demo = await runCli(['demo', '--store', skewed], { cwd: dir.path });
    expect(demo.code).toBe(2);
    expect(demo.stderr).toMatch(
      /^leasehold: --ttl 2s \(the default\) is too short for this store's clock-skew allowance of 1s: use --ttl 2\.1s or more/,
    );
    const acquire = await runCli(
      ['acquire', 'job2', '--owner', 'a', '--store', `${store}?maxClockSkewMs=15000`],
      { cwd: dir.path },
    );
    expect(acquire.code).toBe(2);
    expect(acquire.stderr).toMatch(
      /^leasehold: --ttl 20s \(the default\) is too short .* 15s: use --ttl 30\.\ds or more/,
    );
  });
});

describe('checkTtlFits', () => {
  it('suggests a TTL from which on the client accepts every TTL, for any skew', () => {
    for (const skew of [1, 50, 333, 1000, 15_000, 3_600_000]) {
      const store = new MemoryStore({ maxClockSkewMs: skew });
      let message = '';
      try {
        checkTtlFits({ ms: 100 }, store);
      } catch (error) {
        message = (error as Error).message;
      }
      const match = /use --ttl (\d+(?:\.\d)?)(ms|s) or more/.exec(message);
      if (skew < 48) {
        expect(message, `skew ${skew}`).toBe('');
        continue;
      }
      expect(match, message).not.toBeNull();
      const least = Number(match![1]) * (match![2] === 's' ? 1000 : 1);
      for (let ttlMs = least; ttlMs < least + 400; ttlMs++) {
        expect(() => new LeaseClient({ store, owner: 'o', ttlMs }), `${ttlMs}`).not.toThrow();
        expect(() => checkTtlFits({ ms: ttlMs }, store)).not.toThrow();
      }
    }
  });
});
