import {
  finding,
  findingIds,
  FindingLevel,
  type Diagnosis,
  type Finding,
} from '../../core/doctor.js';
import type { S3Module } from './s3-driver.js';
import { configRefusal } from './s3-errors.js';
import type { ObjectIo } from './s3-objects.js';
import type { EtagForm } from './s3-ops.js';

findingIds('s3.replication', 's3.lifecycle-expiry');

/** A replication or lifecycle rule's filter, as far as the doctor reads it. */
interface RuleFilter {
  Prefix?: string;
  Tag?: object;
  And?: { Prefix?: string; Tags?: object[] };
}

interface ReplicationRule {
  ID?: string;
  Status?: string;
  Prefix?: string;
  Filter?: RuleFilter;
  Destination?: { Bucket?: string };
}

interface LifecycleRule {
  ID?: string;
  Status?: string;
  Prefix?: string;
  Filter?: RuleFilter;
  Expiration?: { Days?: number; Date?: Date | string; ExpiredObjectDeleteMarker?: boolean };
}

/** What the doctor needs of the store. */
export interface S3Probe {
  readonly io: ObjectIo;
  readonly sdk: S3Module;
  /** The key prefix of every lease object (`''` for the whole bucket). */
  readonly keyPrefix: string;
  /** How the open-time probe found `If-Match` wants an ETag. */
  readonly etagForm: EtagForm;
}

/** How a bucket-configuration read ended: its answer, none configured, or not readable. */
type Read =
  | { readonly kind: 'answer'; readonly answer: unknown }
  | { readonly kind: 'none' }
  | { readonly kind: 'unsupported'; readonly why: string }
  | { readonly kind: 'denied'; readonly why: string };

/**
 * The bucket's settings that can undo a conditional write, read with `GetBucketReplication`,
 * `GetBucketLifecycleConfiguration` and `GetBucketVersioning` (each within the store's deadline):
 * an enabled replication rule covering the lease objects (asynchronous: a replica serves older
 * records), and an enabled expiration rule covering them (S3 deletes records, and their tokens
 * start again at 1). Versioning is reported in `checked` only: the probe at open proved the
 * conditional writes with versioning as it was then (radosgw 16 ignores `If-None-Match` once
 * versioning is Enabled, and the probe refuses that at the next open). A read the endpoint does not
 * implement is left out (`checked` says so); a refused one is `unknown`; other failures reject.
 * That the endpoint honours conditional writes is proven at open (the store refuses one that
 * does not), so `checked` reports it as passed.
 */
export async function diagnoseS3(probe: S3Probe): Promise<Diagnosis> {
  const { io, sdk, keyPrefix } = probe;
  const where = keyPrefix === '' ? 'every object' : `"${keyPrefix}"`;
  const [replication, lifecycle, versioning] = await Promise.all([
    read(io, 'GetBucketReplication', sdk.GetBucketReplicationCommand, [
      'ReplicationConfigurationNotFoundError',
    ]),
    read(io, 'GetBucketLifecycleConfiguration', sdk.GetBucketLifecycleConfigurationCommand, [
      'NoSuchLifecycleConfiguration',
    ]),
    read(io, 'GetBucketVersioning', sdk.GetBucketVersioningCommand, []),
  ]);
  const findings: Finding[] = [];

  const replicating =
    replication.kind === 'answer'
      ? (
          (replication.answer as { ReplicationConfiguration?: { Rules?: ReplicationRule[] } })
            .ReplicationConfiguration?.Rules ?? []
        ).filter((rule) => rule.Status === 'Enabled' && covers(rule, keyPrefix))
      : [];
  if (replicating.length > 0) findings.push(replicated(replicating, where));
  if (replication.kind === 'denied') findings.push(replicationUnread(io.bucket, replication.why));

  const expiringRules =
    lifecycle.kind === 'answer'
      ? ((lifecycle.answer as { Rules?: LifecycleRule[] }).Rules ?? []).filter(
          (rule) =>
            rule.Status === 'Enabled' &&
            (rule.Expiration?.Days !== undefined || rule.Expiration?.Date !== undefined) &&
            covers(rule, keyPrefix),
        )
      : [];
  if (expiringRules.length > 0) findings.push(expiring(expiringRules, where));
  if (lifecycle.kind === 'denied') findings.push(lifecycleUnread(io.bucket, lifecycle.why));

  const status =
    versioning.kind === 'answer'
      ? ((versioning.answer as { Status?: string }).Status ?? 'never enabled')
      : summary(versioning, 0);
  const checked = [
    `the conditional-write probe at open: passed (If-None-Match: * and a stale If-Match refused; If-Match takes the ETag ${probe.etagForm})`,
    `GetBucketReplication (enabled rules covering ${where}): ${summary(replication, replicating.length)}`,
    `GetBucketLifecycleConfiguration (enabled expiration rules covering ${where}): ${summary(lifecycle, expiringRules.length)}`,
    `GetBucketVersioning: ${status} (no finding: conditional writes were proven at open; Ceph ` +
      'radosgw 16 ignores If-None-Match on a bucket with versioning Enabled, which the probe ' +
      'refuses: open the store again after turning versioning on)',
  ];
  return { findings, checked };
}

/** One bucket-configuration read, sorted into answer, none, unsupported and denied. */
async function read(
  io: ObjectIo,
  name: string,
  Command: (new (input: object) => object) | undefined,
  noneNames: readonly string[],
): Promise<Read> {
  if (Command === undefined)
    return { kind: 'unsupported', why: `the SDK module given has no ${name}Command` };
  try {
    return {
      kind: 'answer',
      answer: await io.send('diagnose', new Command({ Bucket: io.bucket })),
    };
  } catch (error) {
    const refusal = configRefusal(error, noneNames);
    if (refusal) return refusal;
    throw error;
  }
}

/** How a read ended, for `checked`: how many rules cover the lease objects, or why none were read. */
function summary(read: Read, covering: number): string {
  switch (read.kind) {
    case 'answer':
      return covering === 0 ? 'none' : `${covering} (see the finding)`;
    case 'none':
      return 'none configured';
    case 'unsupported':
      return read.why;
    case 'denied':
      return `refused (${read.why})`;
  }
}

/**
 * Whether a rule applies to some lease objects: its prefix and the store's overlap, and it asks
 * for no tags (lease objects carry none). Size conditions are not weighed.
 */
function covers(rule: { Prefix?: string; Filter?: RuleFilter }, keyPrefix: string): boolean {
  const filter = rule.Filter;
  if (filter?.Tag !== undefined || (filter?.And?.Tags?.length ?? 0) > 0) return false;
  const prefix = filter?.Prefix ?? filter?.And?.Prefix ?? rule.Prefix ?? '';
  return prefix.startsWith(keyPrefix) || keyPrefix.startsWith(prefix);
}

function ruleName(rule: { ID?: string; Prefix?: string; Filter?: RuleFilter }): string {
  const prefix = rule.Filter?.Prefix ?? rule.Filter?.And?.Prefix ?? rule.Prefix ?? '';
  return `rule ${JSON.stringify(rule.ID ?? '')} (prefix ${JSON.stringify(prefix)}`;
}

function replicated(rules: readonly ReplicationRule[], where: string): Finding {
  return finding(
    's3.replication',
    FindingLevel.UNSAFE,
    rules.map((r) => `${ruleName(r)}, to ${r.Destination?.Bucket ?? '?'}): Enabled`).join('; '),
    'replication copies lease objects asynchronously (seconds, up to 15 minutes with Replication ' +
      'Time Control), so the replica serves older records: a failover to it, or an access point ' +
      'that routes there, loses the latest grants, lets a second holder in and hands tokens out ' +
      'again; with two-way replication, conditional writes in the two buckets do not exclude each other',
    `leave ${where} out of the replication rules (a rule Filter prefix that does not cover it) and ` +
      'keep every client on this one bucket',
  );
}

function expiring(rules: readonly LifecycleRule[], where: string): Finding {
  return finding(
    's3.lifecycle-expiry',
    FindingLevel.UNSAFE,
    rules
      .map((r) => {
        const e = r.Expiration!;
        const when =
          e.Days !== undefined
            ? `Expiration Days ${e.Days}`
            : `Expiration Date ${e.Date instanceof Date ? e.Date.toISOString() : String(e.Date)}`;
        return `${ruleName(r)}): Enabled, ${when}`;
      })
      .join('; '),
    'S3 deletes lease objects as they expire (with versioning on, hides them behind a delete ' +
      'marker): an acquire of a deleted record starts its token again at 1, below tokens fences ' +
      'have seen, and a record deleted while held lets a second holder in',
    `leave ${where} out of every expiration rule (a rule Filter prefix that does not cover it): ` +
      'leasehold never deletes a record, each is a few dozen bytes',
  );
}

function replicationUnread(bucket: string, why: string): Finding {
  return finding(
    's3.replication',
    FindingLevel.UNKNOWN,
    `GetBucketReplication of "${bucket}" refused: ${why}`,
    'whether lease objects are replicated to another bucket (which lags, and loses grants on a failover) was not read',
    `allow s3:GetReplicationConfiguration on the bucket, or check by hand: aws s3api get-bucket-replication --bucket ${bucket}`,
  );
}

function lifecycleUnread(bucket: string, why: string): Finding {
  return finding(
    's3.lifecycle-expiry',
    FindingLevel.UNKNOWN,
    `GetBucketLifecycleConfiguration of "${bucket}" refused: ${why}`,
    'whether S3 deletes lease objects as they age (their tokens then start again at 1) was not read',
    'allow s3:GetLifecycleConfiguration on the bucket, or check by hand that no expiration rule ' +
      `covers the lease prefix: aws s3api get-bucket-lifecycle-configuration --bucket ${bucket}`,
  );
}
