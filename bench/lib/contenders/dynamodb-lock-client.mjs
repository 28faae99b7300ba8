// The peer on DynamoDB: dynamodb-lock-client in its FailOpen mode (the one with a fencing token and
// a lease duration), on its own table of leasehold's shape (partition key `resource`). It is
// written for the aws-sdk v2 DocumentClient: it calls get/put/delete with callbacks and tells a
// failed condition by `error.code`, which v3's errors do not carry. The v2 client gets a
// keep-alive agent (v2 opens a connection per request without one; AWS advises keep-alive).
//
// Per cycle: acquireLock = a consistent GetItem, then a wait on a local timer for the
// leaseDurationMs the item records (1 ms once released), then a PutItem conditioned on the guid
// and token read; release = a PutItem conditioned on the guid, with leaseDurationMs 1.
import { Agent } from 'node:http';
import { promisify } from 'node:util';
import AWS from 'aws-sdk';
import DynamoDBLockClient from 'dynamodb-lock-client';

// v2 announces its end of support once per process; the version is pinned.
process.env.AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE ??= '1';

export const PEER_NOTES = {
  'dynamodb-lock-client':
    'a fencing token (FailOpen: the token read, plus one, in a conditional PutItem), but no expiry on any clock: a contender reads the lock, waits its leaseDurationMs on a local timer (less the lock’s age on the local clock with trustLocalTime) and takes it if no heartbeat changed its guid meanwhile; the holder has no deadline and learns of a lost lock only when a heartbeat write fails (an `error` event); a held lock is waited for, a whole lease duration, not refused',
};

export function dynamodbLockClient({ server, libs, ttlMs, credentials }) {
  return {
    name: 'dynamodb-lock-client',
    role: 'peer',
    describe:
      'FailOpen({ leaseDurationMs: TTL, retryCount: 0 }), no heartbeat: acquireLock(); release()',
    note: PEER_NOTES['dynamodb-lock-client'],
    open: async () => {
      // The table (bench_tr_dlc, partition key `resource`), made by leasehold.
      const store = await libs[0].lib.openStore(server.url('tr_dlc'));
      await store.close();
      const agent = new Agent({ keepAlive: true });
      const dynamodb = new AWS.DynamoDB.DocumentClient({
        endpoint: server.endpoint,
        region: 'us-east-1',
        accessKeyId: credentials.accessKeyId,
        secretAccessKey: credentials.secretAccessKey,
        httpOptions: { agent },
      });
      const client = new DynamoDBLockClient.FailOpen({
        dynamodb,
        lockTable: 'bench_tr_dlc',
        partitionKey: 'resource',
        leaseDurationMs: ttlMs,
        retryCount: 0,
        owner: 'bench',
      });
      const acquire = promisify(client.acquireLock.bind(client));
      return {
        cycle: async (w) => {
          const lock = await acquire(`job/${w}`);
          if (!(lock.fencingToken >= 1)) throw new Error('dynamodb-lock-client: no fencing token');
          await promisify(lock.release.bind(lock))();
        },
        close: async () => agent.destroy(),
      };
    },
  };
}
