import { createRequire } from 'node:module';
import { ErrorCode, LeaseError } from './errors.js';

const require = createRequire(import.meta.url);

/**
 * Loads an optional peer package (a store's driver, a metrics library) only when the feature
 * that needs it is first used. A missing package gives `DRIVER_MISSING` naming what to install,
 * in a message that starts with `needs`: who needs it, verb included (`'Prometheus metrics
 * need'`). A CommonJS package comes back as its `module.exports` (the import's `default`).
 */
export async function loadPackage<T>(pkg: string, needs: string): Promise<T> {
  let mod: unknown;
  try {
    mod = await import(pkg);
  } catch (error) {
    if (isNotFound(error, pkg)) {
      throw new LeaseError(
        ErrorCode.DRIVER_MISSING,
        `${needs} the "${pkg}" package: npm install ${pkg}`,
        { cause: error, retryable: false },
      );
    }
    throw error;
  }
  const m = mod as { default?: unknown };
  return (m.default ?? mod) as T;
}

/** `loadPackage` for a store's driver, when that store is opened. */
export function loadDriver<T>(pkg: string, store: string): Promise<T> {
  return loadPackage<T>(pkg, `the ${store} store needs`);
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
