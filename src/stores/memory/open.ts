import {
  checkUrlOptions,
  intParam,
  takeParams,
  urlError,
  type StoreOpenOptions,
  type StoreUrl,
} from '../../core/store-url.js';
import { resolveMemoryOptions } from './memory-options.js';
import { MemoryStore } from './memory-store.js';

/** `memory:` — a fresh store private to this process, with `?maxClockSkewMs=`. */
export async function openMemory(
  url: StoreUrl,
  options: StoreOpenOptions = {},
): Promise<MemoryStore> {
  if (url.rest !== '')
    throw urlError(url, 'a memory store URL takes no path', { hint: 'use memory:' });
  const params = takeParams(url, ['maxClockSkewMs']);
  const store = { maxClockSkewMs: intParam(url, params, 'maxClockSkewMs') };
  checkUrlOptions(url, () => resolveMemoryOptions(store));
  return new MemoryStore(options.clock ? { ...store, clock: options.clock } : store);
}
