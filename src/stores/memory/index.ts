export { MemoryStore } from './memory-store.js';
export type { MemoryStoreOptions } from './memory-options.js';
