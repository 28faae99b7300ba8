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
 * The children of the records znode (one read of every name in the namespace), filtered and
 * sorted here, then the records of the page, read together.
 */
export async function listRecords(
  session: ZkSession,
  paths: ZkPaths,
  prefix: string,
  limit: number,
  after: string,
): Promise<LeaseRecord[]> {
  const names = (await session.getChildren(paths.records)) ?? [];
  const resources = names
    .map(decodeName)
    .filter(
      (r): r is string =>
        r !== undefined && r.startsWith(prefix) && (after === '' || compareResources(r, after) > 0),
    )
    .sort(compareResources);
  const out: LeaseRecord[] = [];
  for (let start = 0; start < resources.length && out.length < limit; start += LIST_READS) {
    const page = resources.slice(start, start + Math.min(LIST_READS, limit - out.length));
    const records = await Promise.all(page.map((r) => readLease(session, paths, r)));
    for (const record of records) if (record && out.length < limit) out.push(record);
  }
  return out;
}
