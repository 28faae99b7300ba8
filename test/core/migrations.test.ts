import { describe, expect, it } from 'vitest';
import { migrateSchema, stepsToRun, type SchemaMigration } from '../../src/core/migrations.js';

describe('stepsToRun', () => {
  const steps = ['to 1', 'to 2', 'to 3'];

  it('runs the steps from the current version to the target, none when current', () => {
    expect(stepsToRun('table t', 0, 3, steps)).toEqual(['to 1', 'to 2', 'to 3']);
    expect(stepsToRun('table t', 2, 3, steps)).toEqual(['to 3']);
    expect(stepsToRun('table t', 3, 3, steps)).toEqual([]);
  });

  it('refuses a table newer than the release, naming it, and not to be retried', () => {
    expect(() => stepsToRun('table "s"."t"', 4, 3, steps)).toThrow(
      expect.objectContaining({
        code: 'STORE_UNAVAILABLE',
        retryable: false,
        message: expect.stringMatching(/table "s"\."t" has schema version 4, newer .* \(3\)/),
      }),
    );
  });

  it('fails loudly when a step was not written', () => {
    expect(() => stepsToRun('table t', 0, 4, steps)).toThrow(/4 migration steps are needed, 3/);
  });
});

describe('migrateSchema', () => {
  /** A store whose meta table records `stored` (and `underLock` once the lock is held), logging each call. */
  function store(
    stored: number | undefined,
    options: { underLock?: number | undefined; readFirst?: boolean; writesCurrent?: boolean } = {},
  ): { migration: SchemaMigration; calls: string[] } {
    const calls: string[] = [];
    let held = false;
    const read = (name: string) => async (): Promise<number | undefined> => {
      calls.push(name);
      return held && 'underLock' in options ? options.underLock : stored;
    };
    const migration: SchemaMigration = {
      what: 'table t',
      version: 3,
      steps: ['to 1', 'to 2', 'to 3'],
      readVersion: read('read'),
      ...(options.readFirst ? { readFirst: read('read first') } : {}),
      locked: async (work) => {
        calls.push('lock');
        held = true;
        try {
          await work();
        } finally {
          held = false;
          calls.push('unlock');
        }
      },
      createMeta: async () => calls.push('create meta'),
      runStep: async (sql) => calls.push(sql),
      writeVersion: async (version) => calls.push(`write ${version}`),
      writesCurrentVersion: options.writesCurrent ?? false,
    };
    return { migration, calls };
  }

  it('reads once, without the lock, when the table is current', async () => {
    const { migration, calls } = store(3, { readFirst: true });
    await migrateSchema(migration);
    expect(calls).toEqual(['read first']);
  });

  it('otherwise, under the lock: makes the meta table, reads again, runs the steps in order, writes the version', async () => {
    const fresh = store(undefined);
    await migrateSchema(fresh.migration);
    expect(fresh.calls).toEqual([
      'read',
      'lock',
      'create meta',
      'read',
      'to 1',
      'to 2',
      'to 3',
      'write 3',
      'unlock',
    ]);
    const old = store(1);
    await migrateSchema(old.migration);
    expect(old.calls).toEqual([
      'read',
      'lock',
      'create meta',
      'read',
      'to 2',
      'to 3',
      'write 3',
      'unlock',
    ]);
  });

  it('writes nothing when another process migrated the table meanwhile, unless the store always writes', async () => {
    const quiet = store(1, { underLock: 3 });
    await migrateSchema(quiet.migration);
    expect(quiet.calls).toEqual(['read', 'lock', 'create meta', 'read', 'unlock']);
    const writes = store(1, { underLock: 3, writesCurrent: true });
    await migrateSchema(writes.migration);
    expect(writes.calls).toEqual(['read', 'lock', 'create meta', 'read', 'write 3', 'unlock']);
  });

  it('refuses a newer table under the lock, running and writing nothing', async () => {
    const { migration, calls } = store(4, { writesCurrent: true });
    await expect(migrateSchema(migration)).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
      retryable: false,
      message: expect.stringMatching(/table t has schema version 4, newer .* \(3\)/),
    });
    expect(calls).toEqual(['read', 'lock', 'create meta', 'read', 'unlock']);
  });
});
