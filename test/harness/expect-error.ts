import { expect } from 'vitest';
import { LeaseError } from '../../src/index.js';

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * What `call` settles with: its value, or the error it rejects with. Fails the test if `call` is
 * still pending after `hangMs`. That bound is a hang guard, not a speed target: keep it far above
 * any deadline under test, so a slow machine never trips it and only a call that never ends does.
 */
export async function settled(
  call: Promise<unknown>,
  hangMs = 15_000,
): Promise<{ value: unknown } | { error: unknown }> {
  let timer: NodeJS.Timeout | undefined;
  const hung = Symbol('hung');
  const outcome = await Promise.race([
    call.then(
      (value: unknown) => ({ value }),
      (error: unknown) => ({ error }),
    ),
    new Promise<typeof hung>((resolve) => {
      timer = setTimeout(() => resolve(hung), hangMs);
    }),
  ]);
  clearTimeout(timer);
  if (outcome === hung) throw new Error(`still pending after ${hangMs} ms: a hang`);
  return outcome;
}

/**
 * The `LeaseError` that `call` rejects with. Fails the test if `call` resolves, rejects with
 * anything else, or is still pending after `hangMs` (a hang, not a slow answer).
 */
export async function rejection(call: Promise<unknown>, hangMs = 15_000): Promise<LeaseError> {
  const outcome = await settled(call, hangMs);
  const error = 'error' in outcome ? outcome.error : new Error('resolved');
  expect(error).toBeInstanceOf(LeaseError);
  return error as LeaseError;
}
