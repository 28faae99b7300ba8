import type { LeaseRecord } from '../../core/lease.js';
import { compareResources } from '../../core/store.js';
import type { DynamodbCalls } from './dynamodb-calls.js';
import type { Item } from './dynamodb-driver.js';
import { scanFloor, scanRequest } from './dynamodb-ops.js';
import { toRecord } from './dynamodb-record.js';

/**
 * `list`: scans every page (1 MB each), keeping the `limit` first records in resource order after
 * `after`. A scan cannot start at a sort position (items lie in hash order), so every call reads
 * the whole table whatever `after` is: one page of a listing costs a full scan (one read unit
 * per 4 KB of table with consistent reads, one request per 1 MB), and paging through N records
 * `limit` at a time costs N / limit full scans. The prefix and a lower bound for `after` are
 * filtered on the server, which trims what comes back but not what is read or charged; the
 * exact `after` test is made here.
 */
export async function listRecords(
  calls: DynamodbCalls,
  query: { readonly prefix: string; readonly limit: number; readonly after: string },
): Promise<LeaseRecord[]> {
  const { prefix, limit, after } = query;
  const floor = scanFloor(after);
  let kept: LeaseRecord[] = [];
  let startKey: Item | undefined;
  do {
    const page = (await calls.send(
      'list',
      new calls.sdk.ScanCommand(scanRequest(calls.table, prefix, floor, startKey)),
    )) as { Items?: Item[]; LastEvaluatedKey?: Item };
    for (const item of page.Items ?? []) {
      const record = toRecord(item);
      if (after === '' || compareResources(record.resource, after) > 0) kept.push(record);
    }
    if (kept.length >= 2 * limit) kept = first(kept, limit);
    startKey = page.LastEvaluatedKey;
  } while (startKey !== undefined);
  return first(kept, limit);
}

/** The `limit` first records in code-point order of their resource. */
function first(records: LeaseRecord[], limit: number): LeaseRecord[] {
  return records.sort((a, b) => compareResources(a.resource, b.resource)).slice(0, limit);
}
