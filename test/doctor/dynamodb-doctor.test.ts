import { afterAll, beforeAll, expect, it } from 'vitest';
import { diagnoseStore, openStore, type Diagnosis, type LeaseStore } from '../../src/index.js';
import { awsRelay, type AwsRelay } from '../harness/aws-relay.js';
import { describeServer } from '../harness/describe-server.js';
import {
  dynaliteUnavailable,
  startDynaliteProcess,
  type DynaliteProcess,
} from '../harness/dynalite-server.js';
import { rejection } from '../harness/expect-error.js';

/** The ids and levels of a diagnosis, for one assertion. */
const found = (d: Diagnosis): string[] => d.findings.map((f) => `${f.id} ${f.level}`);

/** What real DynamoDB adds to `DescribeTable` for a global table (dynalite has none). */
const GLOBAL = {
  GlobalTableVersion: '2019.11.21',
  Replicas: [
    { RegionName: 'us-east-1', ReplicaStatus: 'ACTIVE' },
    { RegionName: 'eu-west-1', ReplicaStatus: 'ACTIVE' },
  ],
};

// One dynalite process (so it can be paused) and one relay in front of it for the whole file.
describeServer('dynamodb doctor', dynaliteUnavailable(), () => {
  let dynalite: DynaliteProcess;
  let relay: AwsRelay;
  let direct: LeaseStore;
  let relayed: LeaseStore;

  beforeAll(async () => {
    dynalite = await startDynaliteProcess();
    relay = await awsRelay(dynalite);
    direct = await openStore(dynalite.url('doctor', { createTable: true, requestTimeoutMs: 1000 }));
    relayed = await openStore(dynalite.url('doctor', { endpoint: relay.endpoint }));
  });
  afterAll(async () => {
    await Promise.allSettled([direct?.close(), relayed?.close()]);
    await relay?.close();
    await dynalite?.stop();
  });

  /** The relay adds `extra` to the `Table` of every `DescribeTable` answer while `run` runs. */
  const describedWith = async <T>(extra: object, run: () => Promise<T>): Promise<T> => {
    relay.rewrite = (request, status, body) => {
      if (request.operation !== 'DescribeTable' || status !== 200) return undefined;
      const answer = JSON.parse(body) as { Table: object };
      return JSON.stringify({ Table: { ...answer.Table, ...extra } });
    };
    try {
      return await run();
    } finally {
      relay.rewrite = undefined;
    }
  };

  it('a single-Region table is clean; DescribeTable is what was read', async () => {
    const diagnosis = await diagnoseStore(direct);
    expect(diagnosis.findings).toEqual([]);
    expect(diagnosis.checked).toEqual([
      'DescribeTable of "doctor" (Replicas, GlobalTableVersion, MultiRegionConsistency)',
    ]);
  });

  it('a table with Replicas (a global table) is dynamodb.global-table, unsafe', async () => {
    relay.clear();
    const diagnosis = await describedWith(GLOBAL, () => diagnoseStore(relayed));
    expect(relay.counts.get('DescribeTable')).toBe(1);
    expect(found(diagnosis)).toEqual(['dynamodb.global-table unsafe']);
    const [global] = diagnosis.findings;
    expect(global!.observed).toBe(
      'table "doctor": Replicas us-east-1 (ACTIVE), eu-west-1 (ACTIVE); ' +
        'GlobalTableVersion 2019.11.21; MultiRegionConsistency not set (EVENTUAL)',
    );
    expect(global!.risk).toContain('last writer winning');
    expect(global!.fix).toContain('single-Region table');
  });

  it('with multi-Region strong consistency it is a warning', async () => {
    const strong = { ...GLOBAL, MultiRegionConsistency: 'STRONG' };
    const diagnosis = await describedWith(strong, () => diagnoseStore(relayed));
    expect(found(diagnosis)).toEqual(['dynamodb.global-table warning']);
    expect(diagnosis.findings[0]!.observed).toContain('MultiRegionConsistency STRONG');
  });

  it('a refused DescribeTable (AccessDeniedException) is dynamodb.global-table, unknown', async () => {
    relay.intercept = (request) =>
      request.operation === 'DescribeTable'
        ? {
            status: 400,
            body: {
              __type: 'com.amazon.coral.service#AccessDeniedException',
              message: 'User is not authorized to perform: dynamodb:DescribeTable',
            },
          }
        : undefined;
    try {
      const diagnosis = await diagnoseStore(relayed);
      expect(found(diagnosis)).toEqual(['dynamodb.global-table unknown']);
      expect(diagnosis.findings[0]!.observed).toContain('not authorized');
      expect(diagnosis.findings[0]!.fix).toContain('dynamodb:DescribeTable');
    } finally {
      relay.intercept = undefined;
    }
  });

  it('a paused server gives STORE_UNAVAILABLE within the deadline, not a hang', async () => {
    dynalite.pause();
    try {
      const error = await rejection(diagnoseStore(direct), 10_000);
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.message).toMatch(/DynamoDB describeTable on table "doctor".*no answer within/);
    } finally {
      dynalite.resume();
    }
  });
});
