import type { LeaseRecord } from '../../core/lease.js';
import { runInOrder } from '../../core/run-in-order.js';
import { KEY_MAX_BYTES, type KeySpace } from './s3-keys.js';
import type { ObjectIo } from './s3-objects.js';
import type { S3Transitions } from './s3-transitions.js';

/** How many keys one ListObjectsV2 page asks for (S3's own maximum). */
const PAGE = 1000;

/**
 * Lists the keys under the prefix in S3's order (UTF-8 bytes, which is the resources' code-point
 * order by the key encoding), starting after `after`, then reads each record:
 * `ceil(n / 1000)` ListObjectsV2 requests and `n` GETs for `n` records, the GETs `concurrency`
 * at a time. Keys that are not lease records (a probe object left by a crash) are skipped.
 */
export async function listRecords(
  store: { io: ObjectIo; keys: KeySpace; transitions: S3Transitions; concurrency: number },
  prefix: string,
  limit: number,
  after: string,
): Promise<LeaseRecord[]> {
  const { io, keys, transitions, concurrency } = store;
  const listPrefix = keys.listPrefix(prefix);
  if (Buffer.byteLength(listPrefix) > KEY_MAX_BYTES) return [];
  const startAfter = after === '' ? undefined : keys.listPrefix(after);
  const resources: string[] = [];
  let token: string | undefined;
  do {
    const page = await io.listPage(
      'list',
      listPrefix,
      startAfter,
      token,
      Math.min(PAGE, limit - resources.length + 1),
    );
    for (const key of page.keys) {
      const resource = keys.resourceOf(key);
      if (resource !== undefined && resources.length < limit) resources.push(resource);
    }
    token = page.next;
  } while (token !== undefined && resources.length < limit);
  const records = await runInOrder(
    resources,
    (resource) => resource,
    concurrency,
    (resource) => transitions.read('list', resource),
  );
  return records.flatMap((found) => (found ? [found.record] : []));
}
