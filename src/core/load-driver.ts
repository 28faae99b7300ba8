import { createRequire } from 'node:module';
import { ErrorCode, LeaseError } from './errors.js';

const require = createRequire(import.meta.url);

/**
 * Loads a store's driver package only when that store is opened, so drivers stay optional.
 * A missing package gives `DRIVER_MISSING` naming what to install.
 */
export async function loadDriver<T>(pkg: string, store: string): Promise<T> {
  let mod: unknown;
  try {
    mod = await import(pkg);
  } catch (error) {
    if (isNotFound(error, pkg)) {
      throw new LeaseError(
        ErrorCode.DRIVER_MISSING,
        `the ${store} store needs the "${pkg}" package: npm install ${pkg}`,
        {
          cause: error,
          retryable: false,
        },
      );
    }
    throw error;
  }
  const m = mod as { default?: unknown };
  return (m.default ?? mod) as T;
}

function isNotFound(error: unknown, pkg: string): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  try {
    require.resolve(pkg);
    return false; // the package is there; something inside it is missing
  } catch {
    return true;
  }
}
