// S3 (Ceph radosgw): leasehold beside the bare compare-and-set of the same shape — one object per
// worker holding {owner, token, expiresAt}; acquire PUTs token + 1 conditioned on the ETag of the
// release it wrote last (If-Match) or on the object's absence (If-None-Match: *), release PUTs
// the owner empty conditioned on the acquire's ETag: one request per transition while nobody
// else writes the object (a read only when it is stale), the caller's clock deciding expiry with
// leasehold's default 1 s skew allowance. The SDK client is set up as leasehold's own.
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { CEPH_S3_USER } from '../private-servers.mjs';
import { S3_BUCKET } from '../servers.mjs';
import { leaseholdContenders } from './leasehold.mjs';

const SKEW_MS = 1000;
const PREFIX = 'tr_bare/';
// radosgw refuses If-Match with the quoted ETag, even the current one: it takes the bare form.
const bare = (etag) => etag.replace(/^"(.*)"$/, '$1');

export function contenders({ server, libs, ttlMs }) {
  return [
    ...leaseholdContenders(libs, server.url, ttlMs),
    {
      name: 'bare',
      role: 'bare',
      describe:
        '@aws-sdk/client-s3: PutObject with If-Match on the ETag it wrote last (If-None-Match: * the first time), token in the body, each way (a read only when it is stale)',
      open: async () => {
        // The bucket is made by leasehold, the first store that opens it.
        const store = await libs[0].lib.openStore(server.url('tr_bare_setup'));
        await store.close();
        const client = new S3Client({
          region: 'us-east-1',
          endpoint: server.endpoint,
          forcePathStyle: true,
          credentials: { ...CEPH_S3_USER },
          maxAttempts: 3,
          requestChecksumCalculation: 'WHEN_REQUIRED',
          responseChecksumValidation: 'WHEN_REQUIRED',
        });
        const put = async (Key, record, etag) => {
          const condition = etag === null ? { IfNoneMatch: '*' } : { IfMatch: etag };
          const answer = await client.send(
            new PutObjectCommand({
              Bucket: S3_BUCKET,
              Key,
              Body: JSON.stringify(record),
              ContentType: 'application/json',
              ...condition,
            }),
          );
          return bare(answer.ETag);
        };
        const known = new Map(); // key → { etag, record } of the last write here
        return {
          cycle: async (w) => {
            const Key = `${PREFIX}job-${w}`;
            const owner = `o${w}`;
            let last = known.get(Key) ?? { etag: null, record: null };
            let acquired;
            let token;
            for (;;) {
              const now = Date.now();
              const held =
                last.record && last.record.owner !== '' && last.record.expiresAt + SKEW_MS >= now;
              if (held) throw new Error(`bench key ${Key} is held`);
              token = (last.record?.token ?? 0) + 1;
              try {
                acquired = await put(Key, { owner, token, expiresAt: now + ttlMs }, last.etag);
                break;
              } catch (error) {
                if (error.$metadata?.httpStatusCode !== 412) throw error;
                last = await read(client, Key); // stale: read, then try again
              }
            }
            const released = { owner: '', token, expiresAt: 0 };
            known.set(Key, { etag: await put(Key, released, acquired), record: released });
          },
          close: async () => client.destroy(),
        };
      },
    },
  ];
}

async function read(client, Key) {
  try {
    const got = await client.send(new GetObjectCommand({ Bucket: S3_BUCKET, Key }));
    return { etag: bare(got.ETag), record: JSON.parse(await got.Body.transformToString()) };
  } catch (error) {
    if (error.$metadata?.httpStatusCode === 404) return { etag: null, record: null };
    throw error;
  }
}
