import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { NatsKv, NatsKvm } from './nats-driver.js';
import { isStreamTaken } from './nats-errors.js';
import { BUCKET_CONFIG } from './nats-ops.js';

/**
 * Opens the bucket, creating it when missing if `create` (with `replicas` copies), and checks that it keeps what fencing
 * depends on: a bucket whose values expire (max age) or that lives in memory would lose records,
 * and the next acquire of a lost record would start its token again below tokens a downstream
 * fence has seen. Such a bucket is refused with `STORE_UNSAFE`. Two or three requests.
 */
export async function openBucket(
  kvm: NatsKvm,
  bucket: string,
  create: boolean,
  replicas = 1,
): Promise<NatsKv> {
  const kv = create ? await createOrOpen(kvm, bucket, replicas) : await kvm.open(bucket);
  const status = await kv.status();
  const unsafe: string[] = [];
  if (status.ttl > 0) unsafe.push(`its values expire after ${status.ttl} ms (max age)`);
  if (status.storage !== 'file') unsafe.push(`it keeps its values in ${status.storage} storage`);
  if (unsafe.length > 0) {
    throw new LeaseError(
      ErrorCode.STORE_UNSAFE,
      `NATS KV bucket "${bucket}" cannot hold leases: ${unsafe.join(' and ')}, so records would be lost and fencing tokens start again; use a bucket with file storage and no max age`,
      { retryable: false },
    );
  }
  return kv;
}

/**
 * `create`, and when another process (or store) created the bucket's stream in the same moment —
 * the server refuses the second creation ("subjects overlap with an existing stream", or the name
 * already in use with another configuration) — the bucket it made, opened.
 */
async function createOrOpen(kvm: NatsKvm, bucket: string, replicas: number): Promise<NatsKv> {
  try {
    return await kvm.create(bucket, { ...BUCKET_CONFIG, replicas });
  } catch (error) {
    if (!isStreamTaken(error)) throw error;
    return kvm.open(bucket);
  }
}
