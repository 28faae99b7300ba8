import { expect } from 'vitest';
import { LeaseError } from '../../src/index.js';

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * The `LeaseError` that `call` rejects with. Fails the test if `call` resolves, rejects with
 * anything else, or is still pending after `hangMs` (a hang, not a slow answer).
 */
export async function rejection(call: Promise<unknown>, hangMs = 15_000): Promise<LeaseError> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise((resolve) => {
    timer = setTimeout(() => resolve(new Error(`still pending after ${hangMs} ms`)), hangMs);
  });
  const error = await Promise.race([
    call.then(
      () => new Error('resolved'),
      (e: unknown) => e,
    ),
    hung,
  ]);
  clearTimeout(timer);
  expect(error).toBeInstanceOf(LeaseError);
  return error as LeaseError;
}
