import { describe, expect, it } from 'vitest';
import { dataText, viewRecord } from '../../src/cli/format.js';

describe('lease data as the CLI shows it', () => {
  const record = { resource: 'job', owner: 'a', token: 3, expiresAt: 2000 };

  it('JSON carries a string as is and bytes as base64; no data, no key', () => {
    expect(viewRecord({ ...record, data: 'offset=42' }, 1000, 0).data).toBe('offset=42');
    expect(viewRecord({ ...record, data: new Uint8Array([0, 1, 255]) }, 1000, 0).data).toEqual({
      base64: 'AAH/',
    });
    expect('data' in viewRecord(record, 1000, 0)).toBe(false);
    expect('data' in viewRecord({ ...record, data: null }, 1000, 0)).toBe(false);
  });

  it('the terminal sees it quoted and escaped, cut at 200 characters with its size', () => {
    expect(dataText('host:9000')).toBe('"host:9000"');
    const shown = dataText('\u001b[31mred\u0007');
    expect(shown.includes('\u001b') || shown.includes('\u0007')).toBe(false);
    expect(dataText('say "hi"')).toBe('"say \\"hi\\""');
    const long = dataText('x'.repeat(4096));
    expect(long.length).toBeLessThan(240);
    expect(long).toMatch(/…" \(4096 bytes\)$/);
    expect(dataText({ base64: 'AAH/' })).toBe('3 bytes, base64 AAH/');
    expect(dataText(undefined)).toBe('-');
  });
});
