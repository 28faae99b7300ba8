import { withDeadline } from '../../core/deadline.js';
import type { LeaseRecord } from '../../core/lease.js';
import { compareResources } from '../../core/store.js';
import type { NatsKv, NatsKvEntry } from './nats-driver.js';
import { noAnswer } from './nats-errors.js';
import { filterOf, resourceOf } from './nats-keys.js';
import { decodeEntry } from './nats-record.js';

/**
 * One consumer stream of every value under the prefix (a filter on the server: see
 * nats-keys.ts), sorted here; `after` and `limit` are applied here too, so every page reads the
 * whole prefix. Right for an admin command or a dashboard, not for a hot path: on a bucket under
 * steady writes to the prefix the consumer may not run out of messages before the deadline.
 */
export function listRecords(
  kv: NatsKv,
  query: { readonly prefix: string; readonly limit: number; readonly after: string },
  options: { readonly timeoutMs: number; readonly bucket: string },
): Promise<LeaseRecord[]> {
  const { prefix, limit, after } = query;
  let iterator: { stop(): void } | undefined;
  const scan = async (): Promise<LeaseRecord[]> => {
    // The keys there are now: once each has come by, the scan is complete. (Without that, a
    // consumer on a bucket under steady writes to the prefix may never run out of messages.)
    const waiting = await keysNow(kv, prefix);
    const entries = await kv.history({ key: filterOf(prefix) });
    iterator = entries;
    // Each key's last entry, decoded once the scan is over: an earlier value of a key (history)
    // does not count, and a value leasehold does not write fails the list as RECORD_INVALID.
    const last = new Map<string, NatsKvEntry>();
    for await (const entry of entries) {
      const resource = resourceOf(entry.key);
      if (resource !== undefined && (after === '' || compareResources(resource, after) > 0))
        last.set(resource, entry);
      if (waiting?.delete(kv.subjectForKey(entry.key)) && waiting.size === 0) {
        entries.stop();
        break;
      }
    }
    const records = [...last].flatMap(([resource, entry]) => {
      const stored = decodeEntry(resource, entry);
      return stored ? [stored.record] : [];
    });
    return records.sort((a, b) => compareResources(a.resource, b.resource)).slice(0, limit);
  };
  const ms = options.timeoutMs;
  return withDeadline(scan(), ms, () => {
    iterator?.stop();
    return noAnswer('list', options.bucket, ms);
  });
}

/**
 * The subjects of the keys under `prefix` now, from the stream's own count per subject (one
 * request); `undefined` when the driver or the server cannot say (then the scan runs until the
 * consumer has nothing more).
 */
async function keysNow(kv: NatsKv, prefix: string): Promise<Set<string> | undefined> {
  const { jsm, stream } = kv;
  if (!jsm || stream === undefined) return undefined;
  const info = await jsm.streams.info(stream, {
    subjects_filter: kv.subjectForKey(filterOf(prefix)),
  });
  // Left out when no key matches (and by a server that ignores the filter): the scan then runs
  // out by itself. Paged by the server beyond 100,000 subjects: the same.
  const subjects = info.state?.subjects;
  if (!subjects) return undefined;
  const keys = Object.keys(subjects);
  return keys.length > 0 && keys.length < 100_000 ? new Set(keys) : undefined;
}
