export { FenceGuard } from './fence-guard.js';
export { FENCE_DEFAULTS, type FencedLease, type FenceOptions, type FenceResult } from './fence.js';
export {
  SqliteFence,
  type SqliteFenceDatabase,
  type SqliteFenceStatement,
} from './sqlite-fence.js';
export {
  PostgresFence,
  type PgFenceClient,
  type PgFencePool,
  type PgFenceQueryResult,
} from './postgres-fence.js';
