import { describe, expect, it } from 'vitest';
import {
  diagnoseStore,
  FindingLevel,
  MemoryStore,
  StoreBase,
  type Diagnosis,
  type LeaseStore,
} from '../../src/index.js';
import { finding, findingIds, worstLevel } from '../../src/core/doctor.js';
import { rejection } from '../harness/expect-error.js';

findingIds('test.a-warning', 'test.an-unsafe', 'test.unknown');

/** A memory store whose diagnosis is what a test says. */
class SaysStore extends MemoryStore {
  constructor(private readonly says: Diagnosis) {
    super();
  }
  override diagnose(): Promise<Diagnosis> {
    return Promise.resolve(this.says);
  }
}

describe('diagnoseStore', () => {
  it('reports the memory store as usable by one process only', async () => {
    const store = new MemoryStore();
    const { findings, checked } = await diagnoseStore(store);
    expect(findings.map((f) => [f.id, f.level])).toEqual([['memory.process-only', 'warning']]);
    expect(findings[0]!.fix).toMatch(/sqlite:/);
    expect(checked.length).toBeGreaterThan(0);
    await store.close();
    // A closed store says so, as every other call does.
    expect((await rejection(diagnoseStore(store))).code).toBe('STORE_UNAVAILABLE');
  });

  it('orders findings the most serious first and leaves out the ignored ones', async () => {
    const store = new SaysStore({
      findings: [
        finding('test.unknown', FindingLevel.UNKNOWN, 'o', 'r', 'f'),
        finding('test.a-warning', FindingLevel.WARNING, 'o', 'r', 'f'),
        finding('test.an-unsafe', FindingLevel.UNSAFE, 'o', 'r', 'f'),
      ],
      checked: ['x'],
    });
    const all = await diagnoseStore(store);
    expect(all.findings.map((f) => f.level)).toEqual(['unsafe', 'warning', 'unknown']);
    expect(worstLevel(all.findings)).toBe('unsafe');
    const some = await diagnoseStore(store, { ignore: ['test.an-unsafe'] });
    expect(some.findings.map((f) => f.id)).toEqual(['test.a-warning', 'test.unknown']);
    expect(worstLevel(some.findings)).toBe('warning');
    expect(worstLevel([])).toBeUndefined();
  });

  it('refuses an ignore list that names no finding, listing the known ids', async () => {
    const store = new MemoryStore();
    const error = await rejection(diagnoseStore(store, { ignore: ['memory.proces-only'] }));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toContain('memory.proces-only');
    expect(error.message).toContain('memory.process-only');
    expect((await rejection(diagnoseStore(store, { ignore: 'x' as never }))).code).toBe(
      'INVALID_ARGUMENT',
    );
  });

  it('says NOT_SUPPORTED for a custom store without diagnose', async () => {
    const custom = Object.create(StoreBase.prototype) as LeaseStore;
    const error = await rejection(diagnoseStore(custom));
    expect(error.code).toBe('NOT_SUPPORTED');
    expect(error.message).toMatch(/by hand/);
  });

  it('refuses a finding whose id was never declared', () => {
    expect(() => finding('test.undeclared', FindingLevel.WARNING, 'o', 'r', 'f')).toThrow(
      /not declared/,
    );
  });
});
