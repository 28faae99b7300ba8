// DynamoDB (dynalite): leasehold beside the bare compare-and-set of the same shape: one
// conditional UpdateItem that takes an absent, released or expired item and bumps its token,
// one conditional UpdateItem that gives it back; the caller's clock deciding expiry, with the
// same 1 s skew allowance as leasehold's default. And the peer dynamodb-lock-client.
import { DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { dynamodbLockClient } from './dynamodb-lock-client.mjs';
import { leaseholdContenders } from './leasehold.mjs';

const SKEW_MS = 1000;
const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };
const NAMES = { '#o': 'owner', '#e': 'expiresAt', '#t': 'token' };

export function contenders({ server, libs, ttlMs }) {
  return [
    ...leaseholdContenders(libs, server.url, ttlMs),
    {
      name: 'bare',
      role: 'bare',
      describe: '@aws-sdk/client-dynamodb: conditional UpdateItem (ADD token) each way',
      open: async () => {
        // A table of leasehold's shape (partition key `resource`), made by leasehold.
        const store = await libs[0].lib.openStore(server.url('tr_bare'));
        await store.close();
        const client = new DynamoDBClient({
          endpoint: server.endpoint,
          region: 'us-east-1',
          credentials,
        });
        const TableName = 'bench_tr_bare';
        return {
          cycle: async (w) => {
            const Key = { resource: { S: `job/${w}` } };
            const owner = { S: `o${w}` };
            const now = Date.now();
            const acquired = await client.send(
              new UpdateItemCommand({
                TableName,
                Key,
                UpdateExpression: 'SET #o = :o, #e = :e ADD #t :one',
                ConditionExpression: 'attribute_not_exists(#e) OR #e < :cutoff',
                ExpressionAttributeNames: NAMES,
                ExpressionAttributeValues: {
                  ':o': owner,
                  ':e': { N: String(now + ttlMs) },
                  ':one': { N: '1' },
                  ':cutoff': { N: String(now - SKEW_MS) },
                },
                ReturnValues: 'UPDATED_NEW',
              }),
            );
            await client.send(
              new UpdateItemCommand({
                TableName,
                Key,
                UpdateExpression: 'SET #o = :empty, #e = :zero',
                ConditionExpression: '#o = :o AND #t = :t',
                ExpressionAttributeNames: NAMES,
                ExpressionAttributeValues: {
                  ':o': owner,
                  ':t': acquired.Attributes.token,
                  ':empty': { S: '' },
                  ':zero': { N: '0' },
                },
              }),
            );
          },
          close: async () => client.destroy(),
        };
      },
    },
    dynamodbLockClient({ server, libs, ttlMs, credentials }),
  ];
}
