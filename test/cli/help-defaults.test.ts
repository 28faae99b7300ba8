import { describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';

const COMMANDS = ['init', 'list', 'get', 'acquire', 'release', 'run', 'demo', 'tour'];

const helps = new Map<string, Promise<Map<string, string>>>();

/** The entries of the "Options:" section of `leasehold COMMAND --help`, by flag, wrapped lines joined. */
function optionHelp(command: string): Promise<Map<string, string>> {
  if (!helps.has(command)) helps.set(command, readOptionHelp(command));
  return helps.get(command)!;
}

async function readOptionHelp(command: string): Promise<Map<string, string>> {
  const { code, stdout } = await runCli([command, '--help']);
  expect(code).toBe(0);
  const lines = stdout.split('\n');
  const start = lines.indexOf('Options:');
  expect(start, command).toBeGreaterThan(-1);
  const entries = new Map<string, string>();
  let flag = '';
  for (const line of lines.slice(start + 1)) {
    if (line.trim() === '') break;
    const entry = /^ {2}(-\S+(?:, --\S+)?(?: <\w+>)?)\s+(.*)$/.exec(line);
    if (entry) {
      flag = entry[1]!;
      entries.set(flag, entry[2]!);
    } else entries.set(flag, `${entries.get(flag)} ${line.trim()}`);
  }
  return entries;
}

describe('defaults in --help', () => {
  it('are shown once per option, and durations in human form, never as raw milliseconds', async () => {
    for (const command of COMMANDS) {
      for (const [flag, text] of await optionHelp(command)) {
        const defaults = text.match(/default/g) ?? [];
        expect(defaults.length, `${command} ${flag}: ${text}`).toBeLessThanOrEqual(1);
        const shown = /\(default: ([^)]*)\)/.exec(text)?.[1];
        if (flag.endsWith('<duration>') && shown !== undefined)
          expect(shown, `${command} ${flag}`).toMatch(/^(\d+(\.\d+)?(ms|s|m|h)|[a-z ,]+)(,|$)/);
        if (shown !== undefined) expect(shown, `${command} ${flag}`).not.toMatch(/^\d{4,}$/);
      }
    }
  });

  it('read as a user would type them', async () => {
    const acquire = await optionHelp('acquire');
    expect(acquire.get('--ttl <duration>')).toMatch(/\(default: 20s\)$/);
    expect(acquire.get('--wait <duration>')).toMatch(/\(default: try once\)$/);
    expect((await optionHelp('tour')).get('--ttl <duration>')).toMatch(/\(default: 2s\)$/);
    expect((await optionHelp('run')).get('--ttl <duration>')).toMatch(/\(default: 20s\)$/);
    expect((await optionHelp('demo')).get('--ttl <duration>')).toMatch(
      /\(default: 2s, 1s with --quick\)$/,
    );
    expect((await optionHelp('list')).get('--limit <n>')).toMatch(/\(default: all\)$/);
  });
});
