import { describe, expect, it } from 'vitest';
import { CallDeadlines } from '../../src/core/call-deadlines.js';
import { sleep } from '../harness/expect-error.js';

const late = (operation: string): Error => new Error(`${operation}: late`);

describe('call deadlines of a store', () => {
  it('rejects each call that got no answer by its own deadline, and only those', async () => {
    const deadlines = new CallDeadlines(150, late);
    const outcomes: string[] = [];
    const track = (name: string, settle?: (resolve: (v: string) => void) => void): Promise<void> =>
      deadlines
        .bound<string>(name, (resolve) => settle?.(resolve))
        .then(
          (value) => void outcomes.push(`${name}=${value}`),
          (error: Error) => void outcomes.push(error.message),
        );
    const started = performance.now();
    const calls = [
      track('never'),
      track('quick', (resolve) => setTimeout(() => resolve('ok'), 20)),
      track('sync', (resolve) => resolve('now')),
    ];
    await sleep(80);
    calls.push(track('later')); // its deadline is 80 ms after the first one's
    await Promise.all(calls);
    const elapsed = performance.now() - started;
    expect(outcomes).toEqual(['sync=now', 'quick=ok', 'never: late', 'later: late']);
    expect(elapsed).toBeGreaterThanOrEqual(80 + 150 - 5);
  });

  it('passes rejections and thrown errors through, and a late answer changes nothing', async () => {
    const deadlines = new CallDeadlines(60, late);
    await expect(
      deadlines.bound('fails', (_, reject) => reject(new Error('boom'))),
    ).rejects.toThrow('boom');
    await expect(
      deadlines.bound('throws', () => {
        throw new Error('bad input');
      }),
    ).rejects.toThrow('bad input');
    let answer: ((value: string) => void) | undefined;
    const slow = deadlines.bound<string>('slow', (resolve) => {
      answer = resolve;
    });
    await expect(slow).rejects.toThrow('slow: late');
    answer!('too late');
    await expect(slow).rejects.toThrow('slow: late');
    await expect(deadlines.bound('next', (resolve) => resolve('fine'))).resolves.toBe('fine');
  });

  it('calls what a late call returned to abandon, once, and not for calls that settled', async () => {
    const deadlines = new CallDeadlines(60, late);
    const abandoned: string[] = [];
    const call = (name: string, settle: boolean): Promise<unknown> =>
      deadlines
        .bound<string>(name, (resolve) => {
          if (settle) setTimeout(() => resolve('ok'), 10);
          return () => abandoned.push(name);
        })
        .catch((error: Error) => error.message);
    const outcomes = await Promise.all([call('answered', true), call('silent', false)]);
    expect(outcomes).toEqual(['ok', 'silent: late']);
    // A later call's deadline passes too: the deadlines have been checked again since.
    await expect(deadlines.bound('later', () => undefined)).rejects.toThrow('later: late');
    expect(abandoned).toEqual(['silent']);
  });
});
