import type { NatsHeaders, NatsKv, NatsModules } from './nats-driver.js';

/*
 * What the store sends: the configuration of a bucket it creates, and the form of a conditional
 * write (a JetStream publish on the key's subject with the expected-revision header, as
 * `@nats-io/kv`'s `put` sends it; see nats-publish.ts). The value written is the record
 * (nats-record.ts).
 */

/** How a missing bucket is made: one value per key, on disk, values never expire. */
export const BUCKET_CONFIG = Object.freeze({ history: 1, storage: 'file' });

/** The header that makes a JetStream publish conditional on the subject's last revision. */
export const EXPECTED_REVISION = 'Nats-Expected-Last-Subject-Sequence';

/** The headers of a write that lands only if the key's last revision is `previousSeq` (0: none). */
export function conditionOn(transport: NatsModules['transport'], previousSeq: number): NatsHeaders {
  const headers = transport.headers();
  headers.set(EXPECTED_REVISION, String(previousSeq));
  return headers;
}

/** What the bucket's handle puts before a key to write it: `$KV.<bucket>.` for a plain bucket. */
export function editPrefix(kv: NatsKv): string {
  const probe = 'k';
  return kv.subjectForKey(probe, true).slice(0, -probe.length);
}
