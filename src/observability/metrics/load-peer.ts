import { createRequire } from 'node:module';
import { ErrorCode, LeaseError } from '../../core/errors.js';

const require = createRequire(import.meta.url);

/**
 * Loads an optional peer package when the feature that needs it is first used. A missing package
 * gives `DRIVER_MISSING` naming what to install.
 */
export async function loadPeer<T>(pkg: string, feature: string): Promise<T> {
  let mod: unknown;
  try {
    mod = await import(pkg);
  } catch (error) {
    if (isMissing(error, pkg)) {
      throw new LeaseError(
        ErrorCode.DRIVER_MISSING,
        `${feature} need the "${pkg}" package: npm install ${pkg}`,
        { cause: error, retryable: false },
      );
    }
    throw error;
  }
  return mod as T;
}

function isMissing(error: unknown, pkg: string): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  try {
    require.resolve(pkg);
    return false; // the package is there; something inside it is missing
  } catch {
    return true;
  }
}
