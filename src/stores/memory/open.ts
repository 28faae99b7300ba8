import { takeParams, intParam, type StoreUrl } from '../../core/open-store.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import { MemoryStore } from './memory-store.js';

/** `memory:` — a fresh store private to this process. */
export async function openMemory(url: StoreUrl): Promise<MemoryStore> {
  if (url.rest !== '') {
    throw new LeaseError(
      ErrorCode.STORE_URL_INVALID,
      `memory store URL takes no path, got ${url.redacted}; use memory:`,
    );
  }
  const params = takeParams(url, ['maxClockSkewMs']);
  return new MemoryStore({ maxClockSkewMs: intParam(url, params, 'maxClockSkewMs') });
}
