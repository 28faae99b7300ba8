import { describe, expect, it } from 'vitest';
import { stepsToRun } from '../../src/core/migrations.js';

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
