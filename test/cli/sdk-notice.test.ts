import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../harness/processes.js';
import { runCli } from './run-cli.js';

/** The AWS SDK's documented switch for its Node.js support notice. */
const SWITCH = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED';
/** Nothing listens on port 1 of the loopback: opening the store fails at once. */
const UNREACHABLE =
  'dynamodb://leases?region=us-east-1&endpoint=http://127.0.0.1:1&requestTimeoutMs=1000';
/** The SDK prints its notice on Node.js versions it will stop supporting. */
const sdkWouldWarn = Number(process.versions.node.split('.')[0]) < 22;

let dir: ReturnType<typeof tempDir>;

beforeAll(() => {
  dir = tempDir('leasehold-cli-sdk-');
});

afterAll(() => dir.cleanup());

describe("the AWS SDK's Node.js support notice", () => {
  it('is not printed before the one-line error of a DynamoDB command', async () => {
    for (const args of [['list'], ['get', 'job'], ['init']]) {
      const result = await runCli([...args, '--store', UNREACHABLE], {
        env: { [SWITCH]: undefined },
      });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toMatch(/^leasehold: STORE_UNAVAILABLE: [^\n]*\n$/);
      expect(result.stderr).not.toMatch(/AWS SDK|NodeVersion|Warning/);
    }
  });

  it.skipIf(!sdkWouldWarn)('is printed when the user sets the switch to false', async () => {
    const result = await runCli(['list', '--store', UNREACHABLE], { env: { [SWITCH]: 'false' } });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('AWS SDK');
  });

  it('is switched off for leasehold alone: the command that "leasehold run" starts does not inherit the switch', async () => {
    const result = await runCli(
      [
        'run',
        'job',
        '--store',
        `sqlite:${join(dir.path, 'run.db')}`,
        '--',
        process.execPath,
        '-e',
        `console.log(process.env.${SWITCH} ?? 'unset')`,
      ],
      { cwd: dir.path, env: { [SWITCH]: undefined } },
    );
    expect(result).toMatchObject({ code: 0, stdout: 'unset\n' });
  });
});
