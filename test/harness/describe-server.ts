import { describe, it } from 'vitest';

/**
 * `describe` for a suite that needs a real server. When the server cannot run here (`reason`), the
 * suite fails under CI and is skipped with a loud line elsewhere — never silently passed.
 */
export function describeServer(title: string, reason: string | null, body: () => void): void {
  if (reason === null) {
    describe(title, body);
  } else if (process.env.CI) {
    describe(title, () => {
      it('has its server available', () => {
        throw new Error(`${title}: server unavailable in CI: ${reason}`);
      });
    });
  } else {
    console.warn(`\n!!! SKIPPED ${title}: ${reason} (this fails in CI)\n`);
    describe.skip(title, body);
  }
}
