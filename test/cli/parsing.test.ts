import { describe, expect, it } from 'vitest';
import { formatRelative, parseDuration } from '../../src/cli/duration.js';
import { scrubPassword } from '../../src/cli/output.js';

describe('CLI durations', () => {
  it('reads human durations into whole milliseconds', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('20s')).toBe(20_000);
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration('2m')).toBe(120_000);
    expect(parseDuration('1h')).toBe(3_600_000);
  });

  it('asks for a unit on a bare number and rejects what is not a duration', () => {
    expect(() => parseDuration('20')).toThrow(/has no unit; add one, e.g. 20s/);
    expect(() => parseDuration('20 sec')).toThrow(/is not a duration/);
    expect(() => parseDuration('-1s')).toThrow(/is not a duration/);
    expect(() => parseDuration('0.5ms')).toThrow(/whole number of milliseconds/);
  });

  it('formats instants relative to now', () => {
    expect(formatRelative(12_340)).toBe('in 12.3s');
    expect(formatRelative(-3_100)).toBe('3.1s ago');
    expect(formatRelative(850)).toBe('in 850ms');
  });
});

describe('password scrubbing', () => {
  it('removes the password of a store URL, raw or percent-decoded, from a message', () => {
    const url = 'postgres://u:p%40ss@127.0.0.1:1/db';
    expect(scrubPassword('auth failed for p%40ss and p@ss', url)).toBe(
      'auth failed for *** and ***',
    );
    expect(scrubPassword('nothing to hide', 'sqlite:./x.db')).toBe('nothing to hide');
  });
});
