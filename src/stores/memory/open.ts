import {
  checkUrlOptions,
  intParam,
  takeParams,
  urlError,
  type StoreUrl,
} from '../../core/store-url.js';
import type { Clock } from '../../core/time.js';
import { resolveMemoryOptions } from './memory-options.js';
import { MemoryStore } from './memory-store.js';

/** `memory:` — a fresh store private to this process, with `?maxClockSkewMs=`. */
export async function openMemory(
  url: StoreUrl,
  given: { clock?: Clock } = {},
): Promise<MemoryStore> {
  if (url.rest !== '')
    throw urlError(url, 'a memory store URL takes no path', { hint: 'use memory:' });
  const params = takeParams(url, ['maxClockSkewMs']);
  const options = { maxClockSkewMs: intParam(url, params, 'maxClockSkewMs') };
  checkUrlOptions(url, () => resolveMemoryOptions(options));
  return new MemoryStore(given.clock ? { ...options, clock: given.clock } : options);
}
