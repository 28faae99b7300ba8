import type { HeldLease, LeaseClient, LeaseStore } from '../index.js';
import { formatDuration } from './duration.js';
import { quoted } from './escape.js';

/**
 * `client.acquire` for a command with `--wait`. On a terminal (stderr a TTY) a lease held by
 * another owner first gets one line saying that the command is waiting, for whom and how long,
 * so a user does not take the wait for a hang; piped output stays as it was (no extra store call).
 */
export async function acquireSayingWait(
  client: LeaseClient,
  store: LeaseStore,
  resource: string,
  waitMs: number,
  signal: AbortSignal,
  family: { permits?: number; fair?: boolean } = {},
): Promise<HeldLease> {
  const permits = family.permits ?? 1;
  const fair = family.fair ?? false;
  if (waitMs <= 0 || process.stderr.isTTY !== true || permits > 1 || fair)
    return client.acquire(resource, { waitMs, signal, permits, fair });
  const started = performance.now();
  const first = await client.tryAcquire(resource);
  if (first) return first;
  const record = await store.get(resource).catch(() => null);
  const holder =
    record && record.owner !== ''
      ? ` (held by ${quoted(record.owner)} with token ${record.token})`
      : '';
  const howLong = Number.isFinite(waitMs) ? `up to ${formatDuration(waitMs)}` : 'until it is free';
  process.stderr.write(
    `leasehold: waiting ${howLong} for the lease on ${quoted(resource)}${holder}…\n`,
  );
  const left = Math.max(0, Math.floor(waitMs - (performance.now() - started)));
  return client.acquire(resource, { waitMs: left, signal });
}
