import type { LeaseRecord } from '../../core/lease.js';
import { compareResources } from '../../core/store.js';
import { readData } from './zookeeper-acquire.js';
import { noTokenZnode } from './zookeeper-errors.js';
import { decodeName, type ZkPaths } from './zookeeper-paths.js';
import { hasDataOf, recordOf } from './zookeeper-record.js';
import type { ZkSession } from './zookeeper-session.js';

/** How many records `list` reads at once. */
const LIST_READS = 1000;

/**
 * The record and token znodes, read together; then the data znode, only when the token znode's
 * stat shows one.
 */
export async function readLease(
  session: ZkSession,
  paths: ZkPaths,
  resource: string,
): Promise<LeaseRecord | null> {
  const at = paths.of(resource);
  const [record, token] = await Promise.all([session.getData(at.record), session.exists(at.token)]);
  if (record && !token) throw noTokenZnode(at);
  if (!record || !token) return null;
  const data = hasDataOf(token) ? await readData(session, at) : null;
  return recordOf(at, record, token, data);
}

/**
 * The names of every resource in the namespace, decoded and sorted, as the records znode's children
 * last read, kept until a child watch says they changed. A fleet lists its membership prefix every
 * scan and on every announcement; reading all the namespace's names each time (10,000 in a fleet of
 * 10,000 resources) made each of those reads cost as much as a full listing. Resource znodes are
 * created by a first acquire and never deleted by leasehold, so the names change only when a
 * resource is new (or a znode is removed by hand), and the watch fires then.
 *
 * What the cache may miss is what a read could miss anyway: ZooKeeper's reads are not linearizable
 * (a server a session is connected to may lag the leader), so a name created by another process
 * can be missing from a listing for a moment either way. A name this store created itself is
 * never missed: every acquisition forgets the cache when it is answered (`forget`), since its
 * create went on another session than the listing's, with no order between the watch's
 * notification and the acquisition's answer. A cache read on a session that is no longer usable
 * (expired, closed; its watch is gone) is read again; a watch outlives a lost connection, which
 * the client sets again on reconnecting.
 */
export class RecordNames {
  private cached: { session: ZkSession; names: Promise<readonly string[]> } | undefined;

  constructor(private readonly paths: ZkPaths) {}

  /** The namespace's resource names, sorted (`compareResources`). */
  of(session: ZkSession): Promise<readonly string[]> {
    const cached = this.cached;
    if (cached && cached.session === session && session.usable) return cached.names;
    const entry: { session: ZkSession; names: Promise<readonly string[]> } = {
      session,
      names: session
        .getChildren(this.paths.records, () => {
          if (this.cached === entry) this.cached = undefined;
        })
        .then((children) =>
          (children ?? [])
            .map(decodeName)
            .filter((r): r is string => r !== undefined)
            .sort(compareResources),
        ),
    };
    this.cached = entry;
    entry.names.catch(() => {
      if (this.cached === entry) this.cached = undefined;
    });
    return entry.names;
  }

  /** Reads the names again next time (this store may just have created a resource znode). */
  forget(): void {
    this.cached = undefined;
  }
}

/**
 * The namespace's names (`RecordNames`: one read of every name, kept while nothing is added),
 * filtered here, then the records of the page, read together.
 */
export async function listRecords(
  session: ZkSession,
  paths: ZkPaths,
  names: RecordNames,
  prefix: string,
  limit: number,
  after: string,
): Promise<LeaseRecord[]> {
  const sorted = await names.of(session);
  // Names with the prefix are one run of the sorted list: from the first at or after the prefix.
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (compareResources(sorted[mid]!, prefix) < 0) low = mid + 1;
    else high = mid;
  }
  const resources: string[] = [];
  for (let i = low; i < sorted.length && sorted[i]!.startsWith(prefix); i++) {
    if (after === '' || compareResources(sorted[i]!, after) > 0) resources.push(sorted[i]!);
  }
  const out: LeaseRecord[] = [];
  for (let start = 0; start < resources.length && out.length < limit; start += LIST_READS) {
    const page = resources.slice(start, start + Math.min(LIST_READS, limit - out.length));
    const records = await Promise.all(page.map((r) => readLease(session, paths, r)));
    for (const record of records) if (record && out.length < limit) out.push(record);
  }
  return out;
}
