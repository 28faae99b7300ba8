import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { SqliteStore } from '../../src/index.js';
import { tempDir } from '../harness/processes.js';
import { checkTenures, type Tenure } from '../harness/tenures.js';

const run = promisify(execFile);
const worker = fileURLToPath(new URL('./race-worker.mjs', import.meta.url));
const dir = tempDir('leasehold-race-');
afterAll(() => dir.cleanup());

it('several OS processes racing on one SQLite file for 100 resources never overlap', async () => {
  const db = `${dir.path}/race.db`;
  await (await SqliteStore.open(db)).close(); // create the schema once, like a deployment would
  const processes = 5;
  const outputs = await Promise.all(
    Array.from({ length: processes }, (_, i) =>
      run(process.execPath, [worker, db, String(i), '100', '3000'], { maxBuffer: 64 << 20 }),
    ),
  );
  type Line =
    | (Tenure & { kind: 'tenure' })
    | { kind: 'error' | 'late-release'; message: string }
    | { kind: 'refused'; count: number }
    | { kind: 'given-back'; resource: string; token: number };
  const lines = outputs
    .flatMap((o) => o.stdout.trim().split('\n'))
    .map((l) => JSON.parse(l) as Line);
  const refused = lines.reduce((n, l) => n + (l.kind === 'refused' ? l.count : 0), 0);
  const errors = lines.filter((l) => l.kind === 'error');
  expect(errors, JSON.stringify(errors.slice(0, 3))).toEqual([]);
  const tenures = lines.filter((l) => l.kind === 'tenure');
  const verdict = checkTenures(tenures);
  expect(verdict.violations, verdict.violations.slice(0, 5).join('\n')).toEqual([]);
  // The race was real: processes were refused leases others held, every process won some,
  // resources changed hands often, and both graceful releases and abandoned (expired, then
  // reclaimed) leases happened.
  expect(refused).toBeGreaterThan(0);
  expect(tenures.length).toBeGreaterThan(150);
  expect(new Set(tenures.map((t) => t.owner.replace(/-q$/, ''))).size).toBe(processes);
  expect(verdict.handovers).toBeGreaterThan(50);
  expect(tenures.some((t) => t.how === 'abandoned')).toBe(true);
  expect(tenures.some((t) => t.how === 'released')).toBe(true);
  const store = await SqliteStore.open(db);
  const records = await store.list({ limit: 1000 });
  await store.close();
  // Every grant is a tenure, or was given back unused (answered after its deadline, on a loaded
  // machine): the record's token is the highest of them.
  const granted = [
    ...tenures,
    ...lines.filter((l): l is Extract<Line, { kind: 'given-back' }> => l.kind === 'given-back'),
  ];
  for (const record of records) {
    const last = Math.max(
      ...granted.filter((t) => t.resource === record.resource).map((t) => t.token),
    );
    expect(record.token).toBe(last);
  }
}, 60_000);
