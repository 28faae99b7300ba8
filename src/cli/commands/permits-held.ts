import { ErrorCode, LeaseError, type LeaseStore } from '../../index.js';
import { isLive } from '../../core/lease.js';
import { permitResources } from '../../core/permits.js';
import { formatDuration } from '../duration.js';
import { expiresText, viewRecord } from '../format.js';
import { quoted } from '../escape.js';

/** Holders named in the message at most; past that, only how many. */
const NAMED = 3;

/**
 * The error for `acquire --permits N` when no permit was free: how many of the N permits are held
 * and by whom (as the store shows them now), and when the first of them lapses.
 */
export async function permitsUnavailable(
  store: LeaseStore,
  name: string,
  permits: number,
  waitMs: number,
  cause: LeaseError,
): Promise<LeaseError> {
  const waited = waitMs > 0 ? ` (waited ${formatDuration(waitMs)})` : '';
  const keys = new Set(permitResources(name, permits));
  const now = Date.now();
  const records = await Promise.all([
    store.get(name),
    store.list({ prefix: `${name}\u0001permit=`, limit: 2000 }),
  ]).then(
    ([own, rest]) =>
      [...(own ? [own] : []), ...rest].filter(
        (r) => keys.has(r.resource) && isLive(r, now, store.maxClockSkewMs),
      ),
    () => [],
  );
  let message = `all ${permits} permits of ${quoted(name)} are held${waited}`;
  if (records.length > 0) {
    const owners = [...new Set(records.map((r) => r.owner))];
    const who =
      owners.length <= NAMED
        ? owners.map(quoted).join(', ')
        : `${owners.slice(0, NAMED).map(quoted).join(', ')} and ${owners.length - NAMED} more`;
    const first = records.reduce((a, b) => (b.expiresAt < a.expiresAt ? b : a));
    const view = viewRecord(first, now, store.maxClockSkewMs);
    message += `, by ${who}; the first to lapse expires ${expiresText(view)}`;
  }
  return new LeaseError(ErrorCode.LEASE_UNAVAILABLE, message, {
    resource: name,
    retryable: true,
    cause,
  });
}
