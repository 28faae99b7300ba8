import type { LeaseRecord } from '../../core/lease.js';
import type { EtcdKeyValue } from './etcd-driver.js';
import { KIND, type EtcdKeys } from './etcd-keys.js';
import { isTooLarge } from './etcd-errors.js';
import { recordOf, type ResourceKvs } from './etcd-record.js';
import type { EtcdRpc } from './etcd-rpc.js';

/** Keys read per `list` page at most (each resource has two to four). */
const PAGE_KEYS = 3000;

/** The fewest keys a page is cut down to: four resources' worth at the data limit is far below 4 MiB. */
const PAGE_KEYS_MIN = 16;

/**
 * Keys per page that the client of each store's calls last received whole. gRPC refuses an answer
 * over the client's receive limit (4 MiB by default): 3000 keys of records that carry
 * `LIMITS.dataMaxBytes` of data each are about 6 MB. A page refused so is read again at half the
 * keys, and later lists of that client start from what fitted.
 */
const fitting = new WeakMap<EtcdRpc, number>();

/**
 * The first `limit` records of resources starting with `prefix` and sorting after `after` ('' for
 * none), in resource order. Range reads of up to 3000 keys (fewer where records carry so much
 * data that a page would be over gRPC's receive limit), all at the revision of the first, so pages
 * are one snapshot; with `after`, the range starts where the keys of the resources sorting after
 * it begin, so a page costs what it returns, wherever it starts.
 */
export async function listRecords(
  rpc: EtcdRpc,
  keys: EtcdKeys,
  prefix: string,
  limit: number,
  after: string,
): Promise<LeaseRecord[]> {
  const { start, end } = keys.names(prefix);
  const past = after === '' ? start : keys.resource(after).end;
  let from = Buffer.compare(past, start) > 0 ? past : start;
  // A prefix is UTF-8, which has no 0xff byte, so `end` is a real bound, never "to the end".
  if (Buffer.compare(from, end) >= 0) return [];
  const records: LeaseRecord[] = [];
  let group: { resource: string; kvs: EtcdKeyValue[] } | undefined;
  const flush = (): void => {
    const record = group && recordOf(group.resource, byKind(keys, group.kvs));
    if (record) records.push(record);
  };
  let revision: string | undefined;
  for (;;) {
    const most = fitting.get(rpc) ?? PAGE_KEYS;
    const page = Math.min(most, 4 * (limit - records.length) + 4);
    let response: Awaited<ReturnType<EtcdRpc['range']>>;
    try {
      response = await rpc.range({ key: from, range_end: end, limit: page, revision });
    } catch (error) {
      if (!isTooLarge(error) || page <= PAGE_KEYS_MIN) throw error;
      fitting.set(rpc, Math.max(PAGE_KEYS_MIN, Math.floor(page / 2)));
      continue; // the same range again, fewer keys at a time
    }
    revision ??= response.header?.revision;
    for (const kv of response.kvs) {
      const parsed = keys.parse(kv.key);
      if (!parsed) continue;
      if (group?.resource !== parsed.resource) {
        flush();
        if (records.length >= limit) return records;
        group = { resource: parsed.resource, kvs: [] };
      }
      group.kvs.push(kv);
    }
    const last = response.kvs.at(-1);
    if (!response.more || !last) break;
    from = Buffer.concat([last.key, Buffer.from([0])]);
  }
  flush();
  return records.slice(0, limit);
}

/** One resource's keys, by kind. */
export function byKind(keys: EtcdKeys, kvs: readonly EtcdKeyValue[]): ResourceKvs {
  const out: ResourceKvs = {};
  for (const kv of kvs) {
    const kind = keys.parse(kv.key)?.kind;
    if (kind === KIND.hold) out.hold = kv;
    else if (kind === KIND.data) out.data = kv;
    else if (kind === KIND.record) out.record = kv;
    else if (kind === KIND.token) out.token = kv;
  }
  return out;
}
