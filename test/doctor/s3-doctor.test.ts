import {
  PutBucketLifecycleConfigurationCommand,
  PutBucketPolicyCommand,
  PutBucketVersioningCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { diagnoseStore, openStore, type Diagnosis, type LeaseStore } from '../../src/index.js';
import { awsRelay, type AwsRelay } from '../harness/aws-relay.js';
import { CEPH_S3_USER, CephServer, cephUnavailable } from '../harness/ceph-server.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';

/** The ids and levels of a diagnosis, for one assertion. */
const found = (d: Diagnosis): string[] => d.findings.map((f) => `${f.id} ${f.level}`);

/** A replication rule as S3 answers it in `GetBucketReplication`. */
const ruleXml = (id: string, prefix: string): string =>
  `<Rule><ID>${id}</ID><Priority>1</Priority><Status>Enabled</Status>` +
  `<Filter><Prefix>${prefix}</Prefix></Filter>` +
  `<Destination><Bucket>arn:aws:s3:::leases-replica</Bucket></Destination>` +
  `<DeleteMarkerReplication><Status>Disabled</Status></DeleteMarkerReplication></Rule>`;

// One Ceph (radosgw) for the whole file, and one relay in front of it.
describeServer('s3 doctor', cephUnavailable(), () => {
  let ceph: CephServer;
  let relay: AwsRelay;
  let admin: S3Client;
  const stores: LeaseStore[] = [];
  const open = async (
    bucket: string,
    params: Record<string, string | number | boolean> = {},
  ): Promise<LeaseStore> => {
    const url = ceph.url(bucket, 'leases/', {
      createBucket: true,
      requestTimeoutMs: 1000,
      ...params,
    });
    const store = await openStore(url);
    stores.push(store);
    return store;
  };

  beforeAll(async () => {
    ceph = await CephServer.start();
    relay = await awsRelay(ceph);
    admin = new S3Client({
      region: 'us-east-1',
      endpoint: ceph.endpoint,
      forcePathStyle: true,
      credentials: { ...CEPH_S3_USER },
    });
  });
  afterAll(async () => {
    await Promise.allSettled(stores.map((s) => s.close()));
    admin?.destroy();
    await relay?.close();
    await ceph?.stop();
  });

  it('a bucket without replication or expiration is clean; the probe, the rules and versioning were read', async () => {
    const store = await open('doctor-clean');
    const clean = await diagnoseStore(store);
    expect(clean.findings).toEqual([]);
    expect(clean.checked).toEqual([
      'the conditional-write probe at open: passed (If-None-Match: * and a stale If-Match refused; If-Match takes the ETag bare)',
      'GetBucketReplication (enabled rules covering "leases/"): none',
      'GetBucketLifecycleConfiguration (enabled expiration rules covering "leases/"): none configured',
      expect.stringMatching(
        /^GetBucketVersioning: never enabled \(no finding: conditional writes were proven at open;/,
      ),
    ]);
  });

  it('versioning is information only; radosgw 16 stops honouring If-None-Match once it is Enabled, which the probe at the next open refuses', async () => {
    const Bucket = 'doctor-versioned';
    const store = await open(Bucket);
    for (const Status of ['Suspended', 'Enabled'] as const) {
      await admin.send(
        new PutBucketVersioningCommand({ Bucket, VersioningConfiguration: { Status } }),
      );
      const diagnosis = await diagnoseStore(store);
      expect(diagnosis.findings).toEqual([]);
      expect(diagnosis.checked[3]).toMatch(
        new RegExp(`^GetBucketVersioning: ${Status} \\(no finding`),
      );
    }
    const error = await rejection(open(Bucket));
    expect(error.code).toBe('STORE_UNSAFE');
    expect(error.message).toContain('a second create of the probe object replaced it');
  });

  it('an expiration rule covering the lease prefix is s3.lifecycle-expiry, unsafe (radosgw keeps it)', async () => {
    const Bucket = 'doctor-lifecycle';
    const store = await open(Bucket);
    await admin.send(
      new PutBucketLifecycleConfigurationCommand({
        Bucket,
        LifecycleConfiguration: {
          Rules: [
            {
              ID: 'other',
              Status: 'Enabled',
              Filter: { Prefix: 'other/' },
              Expiration: { Days: 1 },
            },
            {
              ID: 'tagged',
              Status: 'Enabled',
              Filter: { Tag: { Key: 'kind', Value: 'tmp' } },
              Expiration: { Days: 1 },
            },
            { ID: 'off', Status: 'Disabled', Filter: { Prefix: '' }, Expiration: { Days: 1 } },
            { ID: 'old', Status: 'Enabled', Filter: { Prefix: 'lea' }, Expiration: { Days: 30 } },
          ],
        },
      }),
    );
    const diagnosis = await diagnoseStore(store);
    expect(found(diagnosis)).toEqual(['s3.lifecycle-expiry unsafe']);
    const [expiry] = diagnosis.findings;
    expect(expiry!.observed).toBe('rule "old" (prefix "lea"): Enabled, Expiration Days 30');
    expect(expiry!.risk).toContain('starts its token again at 1');
    expect(expiry!.fix).toContain('leave "leases/" out of every expiration rule');
  });

  it('a replication rule covering the lease prefix is s3.replication, unsafe (added by the relay: radosgw 16 takes none)', async () => {
    const store = await open('doctor-clean', { endpoint: relay.endpoint });
    relay.rewrite = (request, status, body) =>
      request.method === 'GET' && /[?&]replication\b/.test(request.url) && status === 200
        ? body.replace(
            '</ReplicationConfiguration>',
            `${ruleXml('elsewhere', 'other/')}${ruleXml('to-replica', '')}</ReplicationConfiguration>`,
          )
        : undefined;
    try {
      const diagnosis = await diagnoseStore(store);
      expect(found(diagnosis)).toEqual(['s3.replication unsafe']);
      const [replication] = diagnosis.findings;
      expect(replication!.observed).toBe(
        'rule "to-replica" (prefix "", to arn:aws:s3:::leases-replica): Enabled',
      );
      expect(replication!.risk).toContain('asynchronously');
      expect(replication!.fix).toContain('leave "leases/" out of the replication rules');
    } finally {
      relay.rewrite = undefined;
    }
  });

  it('reads the bucket policy refuses are unknown, naming the permission', async () => {
    const Bucket = 'doctor-denied';
    const store = await open(Bucket);
    const Policy = JSON.stringify({
      Version: '2012-10-17',
      Statement: [
        {
          Effect: 'Deny',
          Principal: '*',
          Action: ['s3:GetReplicationConfiguration', 's3:GetLifecycleConfiguration'],
          Resource: [`arn:aws:s3:::${Bucket}`],
        },
      ],
    });
    await admin.send(new PutBucketPolicyCommand({ Bucket, Policy }));
    const diagnosis = await diagnoseStore(store);
    expect(found(diagnosis)).toEqual(['s3.lifecycle-expiry unknown', 's3.replication unknown']);
    expect(diagnosis.findings[1]!.observed).toMatch(
      /^GetBucketReplication of "doctor-denied" refused: AccessDenied/,
    );
    expect(diagnosis.findings[1]!.fix).toContain('s3:GetReplicationConfiguration');
    expect(diagnosis.findings[0]!.fix).toContain('s3:GetLifecycleConfiguration');
  });

  it('a read the endpoint does not implement is left out, and checked says so', async () => {
    const store = await open('doctor-clean', { endpoint: relay.endpoint });
    relay.intercept = (request) =>
      /[?&]replication\b/.test(request.url)
        ? {
            status: 501,
            body: '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NotImplemented</Code><Message>A header you provided implies functionality that is not implemented</Message></Error>',
          }
        : undefined;
    try {
      const diagnosis = await diagnoseStore(store);
      expect(diagnosis.findings).toEqual([]);
      expect(diagnosis.checked[1]).toBe(
        'GetBucketReplication (enabled rules covering "leases/"): not implemented by this endpoint (NotImplemented)',
      );
    } finally {
      relay.intercept = undefined;
    }
  });

  it('a paused server gives STORE_UNAVAILABLE within the deadline, not a hang', async () => {
    const store = await open('doctor-clean');
    ceph.pause();
    try {
      const error = await rejection(diagnoseStore(store), 10_000);
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.message).toMatch(
        /S3 diagnose in bucket "doctor-clean".*no answer within 1000 ms/,
      );
    } finally {
      ceph.resume();
    }
  });
});
