import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/index.js';
import { tempDir } from '../harness/processes.js';
import { runCli, type CliResult } from './run-cli.js';

/** More than one page of the CLI's reads, and more than the old fixed limit of 1,000. */
const COUNT = 2345;
const names = Array.from({ length: COUNT }, (_, i) => `job/${String(i).padStart(5, '0')}`);

let dir: ReturnType<typeof tempDir>;
let store: string;
const cli = (...args: string[]): Promise<CliResult> =>
  runCli([...args, '--store', store], { cwd: dir.path });

beforeAll(async () => {
  dir = tempDir('leasehold-cli-list-');
  store = `sqlite:${join(dir.path, 'many.db')}`;
  const filling = await openStore(store);
  try {
    await filling.acquireMany(names, 'filler', 600_000);
    await filling.tryAcquire('other/one', 'filler', 600_000);
  } finally {
    await filling.close();
  }
});

afterAll(() => dir.cleanup());

/** The resources of a table printed by `leasehold list`, after its header. */
function tableResources(stdout: string): string[] {
  const lines = stdout.trimEnd().split('\n');
  expect(lines[0]).toMatch(/^RESOURCE\s+OWNER\s+TOKEN\s+STATE\s+EXPIRES$/);
  return lines.slice(1).map((line) => line.split(/\s+/)[0]!);
}

interface ListJson {
  clock: string;
  checkedAt: number;
  leases: { resource: string; owner: string; state: string }[];
  more: boolean;
}

describe('leasehold list over more than one page', () => {
  it('prints every record by default, in order, once each, with nothing on stderr', async () => {
    const table = await cli('list', '--prefix', 'job/');
    expect(table).toMatchObject({ code: 0, stderr: '' });
    expect(tableResources(table.stdout)).toEqual(names);

    const json = await cli('list', '--prefix', 'job/', '--json');
    expect(json).toMatchObject({ code: 0, stderr: '' });
    const parsed = JSON.parse(json.stdout) as ListJson;
    expect(parsed.leases.map((l) => l.resource)).toEqual(names);
    expect(parsed).toMatchObject({ clock: 'local', more: false });
    expect(parsed.leases[COUNT - 1]).toMatchObject({ owner: 'filler', state: 'held' });
    // One JSON document, written as the pages come, in the same form as the other commands' JSON.
    expect(json.stdout).toBe(`${JSON.stringify(parsed, null, 2)}\n`);
  });

  it('stops at --limit and says on stderr that more exist; JSON stays one valid document', async () => {
    const table = await cli('list', '--limit', '1000');
    expect(table.code).toBe(0);
    expect(tableResources(table.stdout)).toEqual(names.slice(0, 1000));
    expect(table.stderr).toBe(
      'leasehold: showing the first 1000 records; more exist: raise --limit, or narrow with --prefix\n',
    );

    const json = await cli('list', '--limit', '1500', '--json');
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as ListJson;
    expect(parsed.leases.map((l) => l.resource)).toEqual(names.slice(0, 1500));
    expect(parsed.more).toBe(true);
    expect(json.stderr).toMatch(/^leasehold: showing the first 1500 records; more exist/);
  });

  it('says nothing more when --limit is exactly the number of records', async () => {
    const exact = await cli('list', '--prefix', 'job/', '--limit', String(COUNT), '--json');
    expect(exact).toMatchObject({ code: 0, stderr: '' });
    expect((JSON.parse(exact.stdout) as ListJson).leases).toHaveLength(COUNT);
    const all = await cli('list', '--limit', String(COUNT + 1));
    expect(all).toMatchObject({ code: 0, stderr: '' });
    expect(tableResources(all.stdout)).toEqual([...names, 'other/one']);
  });

  it('still reports an empty result as before', async () => {
    const none = await cli('list', '--prefix', 'nothing/');
    expect(none).toMatchObject({
      code: 0,
      stderr: '',
      stdout: 'no lease records under "nothing/"\n',
    });
    const json = await cli('list', '--prefix', 'nothing/', '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({ leases: [], more: false });
  });
});
