import {
  finding,
  findingIds,
  FindingLevel,
  type Diagnosis,
  type Finding,
} from '../../core/doctor.js';
import { isAccessDenied } from './dynamodb-errors.js';

findingIds('dynamodb.global-table');

/** What `DescribeTable` says of a table's replication, as far as the doctor reads it. */
interface TableReplication {
  Replicas?: { RegionName?: string; ReplicaStatus?: string }[];
  GlobalTableVersion?: string;
  /** `EVENTUAL` (the default) or `STRONG` (multi-Region strong consistency). */
  MultiRegionConsistency?: string;
}

/**
 * Whether the store's table is a global table, from one `DescribeTable` (`describe`, sent with
 * the store's deadline): a table with `Replicas` is replicated between Regions, where each
 * Region checks a conditional write against its own copy and replication settles conflicts by
 * last writer wins, so grants in two Regions do not exclude each other (unsafe). With
 * multi-Region strong consistency, a warning: writes are replicated before they are
 * acknowledged, but leasehold has not been verified on it. A refused `DescribeTable` (access
 * denied) is reported as unknown; any other failure rejects.
 */
export async function diagnoseDynamodb(
  table: string,
  describe: () => Promise<unknown>,
): Promise<Diagnosis> {
  const checked = [
    `DescribeTable of "${table}" (Replicas, GlobalTableVersion, MultiRegionConsistency)`,
  ];
  let description: TableReplication;
  try {
    description = ((await describe()) as { Table?: TableReplication }).Table ?? {};
  } catch (error) {
    if (!isAccessDenied(error)) throw error;
    return { findings: [unread(table, (error as Error).message)], checked };
  }
  const replicas = description.Replicas ?? [];
  if (replicas.length === 0) return { findings: [], checked };
  return { findings: [globalTable(table, description, replicas)], checked };
}

function globalTable(
  table: string,
  description: TableReplication,
  replicas: NonNullable<TableReplication['Replicas']>,
): Finding {
  const regions = replicas.map(
    (r) => `${r.RegionName ?? '?'}${r.ReplicaStatus ? ` (${r.ReplicaStatus})` : ''}`,
  );
  const consistency = description.MultiRegionConsistency ?? 'EVENTUAL';
  const observed =
    `table "${table}": Replicas ${regions.join(', ')}` +
    (description.GlobalTableVersion
      ? `; GlobalTableVersion ${description.GlobalTableVersion}`
      : '') +
    `; MultiRegionConsistency ${description.MultiRegionConsistency ?? 'not set (EVENTUAL)'}`;
  const fix =
    'keep leases in a single-Region table (a table of their own, not a replica of a global ' +
    'table), or pin every client to one Region (the same region= in every store URL)';
  if (consistency === 'STRONG') {
    return finding(
      'dynamodb.global-table',
      FindingLevel.WARNING,
      observed,
      'with multi-Region strong consistency a write is replicated before it is acknowledged, ' +
        'but leasehold has not been verified on it: whether conditional writes sent to two ' +
        'Regions exclude each other rests on DynamoDB alone',
      `${fix}, unless you have checked that conditional writes from two Regions exclude each other`,
    );
  }
  return finding(
    'dynamodb.global-table',
    FindingLevel.UNSAFE,
    observed,
    'each Region checks a conditional write against its own copy and replicates it later, the ' +
      'last writer winning: clients in two Regions can both be granted one lease, with the same ' +
      'token, and a failover to another Region loses the grants not replicated yet (their ' +
      'tokens are handed out again)',
    `${fix}; a failover to another Region can still lose the latest grants`,
  );
}

function unread(table: string, message: string): Finding {
  return finding(
    'dynamodb.global-table',
    FindingLevel.UNKNOWN,
    `DescribeTable of "${table}" refused: ${message}`,
    'whether the table is replicated between Regions (a global table, where conditional writes ' +
      'in two Regions do not exclude each other) was not read',
    `allow dynamodb:DescribeTable on the table, or check by hand that it has no replicas: ` +
      `aws dynamodb describe-table --table-name ${table} --query Table.Replicas`,
  );
}
