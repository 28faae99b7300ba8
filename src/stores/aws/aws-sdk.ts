import { invalidArgument } from '../../core/errors.js';

/**
 * An AWS SDK client module a caller passed (for bundlers, which cannot see the store's own
 * `import()`), checked for the classes the store uses: `INVALID_ARGUMENT` naming `sdk` and what is
 * missing otherwise.
 */
export function checkSdk<T>(given: object, classes: readonly string[], pkg: string): T {
  const missing = classes.filter(
    (name) => typeof (given as Record<string, unknown>)[name] !== 'function',
  );
  if (missing.length > 0)
    throw invalidArgument('sdk', `must be the ${pkg} module; it has no ${missing.join(', ')}`);
  return given as T;
}

/** What an attempt of the SDK may take: a third of the call's deadline, so it can retry twice. */
export function attemptTimeoutMs(requestTimeoutMs: number): number {
  return Math.max(50, Math.floor(requestTimeoutMs / 3));
}
