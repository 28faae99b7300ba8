import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { KeySpace } from './s3-keys.js';
import type { ObjectIo, PutResult } from './s3-objects.js';
import type { EtagForm, PutCondition } from './s3-ops.js';
import { statusOf } from './s3-errors.js';
import { newWriteId } from './s3-record.js';

/** The guarantees every lease transition rests on, as the probe names them. */
export const GUARANTEES = Object.freeze({
  createOnly:
    'create-only-if-absent (a PUT with If-None-Match: * must be refused over an existing object)',
  replaceRead:
    'replace-only-the-version-read (a PUT with If-Match naming a stale ETag must be refused)',
  currentEtag: 'conditional replace (a PUT with If-Match naming the current ETag must land)',
});

function unsafe(io: ObjectIo, guarantee: string, what: string, cause?: unknown): LeaseError {
  return new LeaseError(
    ErrorCode.STORE_UNSAFE,
    `the S3 endpoint${io.where} (bucket "${io.bucket}") lacks ${guarantee}: ${what}. ` +
      'Leases on it could have two holders at once, so the store refuses it; use a service that ' +
      'honours conditional writes (AWS S3, Ceph radosgw)',
    { cause, retryable: false },
  );
}

/**
 * Proves on a fresh object under the prefix, before the store takes any lease, that the endpoint
 * honours the two conditions leases rest on, and finds how it wants an ETag in `If-Match`:
 *
 * 1. create the probe object with `If-None-Match: *`;
 * 2. the same again must be refused (412): else `STORE_UNSAFE`, create-only-if-absent;
 * 3. a PUT with `If-Match` naming the current ETag must land, quoted (`"…"`, as AWS S3 wants) or
 *    else bare (as radosgw wants); the form that lands is the one the store uses from then on;
 * 4. a PUT with `If-Match` naming the now stale first ETag, in that same form, must be refused:
 *    else `STORE_UNSAFE`, replace-only-the-version-read;
 * 5. a read must show the write of step 3, so a refused write did not land after all.
 *
 * The probe object is deleted at the end (its key starts with `.`, which no resource's key does,
 * so one left behind by a crash is skipped by `list`). Costs 4 or 5 PUTs, one GET and one DELETE.
 */
export async function probeConditionalWrites(io: ObjectIo, keys: KeySpace): Promise<EtagForm> {
  const key = keys.probeKey(newWriteId());
  const body = (step: number): string => JSON.stringify({ probe: step, write: newWriteId() });
  // Only this probe writes its key, so an unclear answer is decided by reading the body back.
  const put = async (
    text: string,
    condition: PutCondition,
    form?: EtagForm,
  ): Promise<PutResult> => {
    const result = await io.put('probe', key, text, condition, form);
    if (result.kind !== 'unclear' || statusOf(result.error) === 501) return result;
    const seen = await io.get('probe', key);
    return seen?.body === text ? { kind: 'written', etag: seen.etag } : { kind: 'refused' };
  };
  try {
    const first = await put(body(1), { absent: true });
    const created = expectWritten(io, first, GUARANTEES.createOnly, 'a create of a new object');
    const again = await put(body(2), { absent: true });
    if (again.kind === 'written')
      throw unsafe(io, GUARANTEES.createOnly, 'a second create of the probe object replaced it');
    if (again.kind === 'unclear')
      throw unsafe(io, GUARANTEES.createOnly, 'If-None-Match: * is not implemented (HTTP 501)');

    const third = body(3);
    let form: EtagForm = 'quoted';
    let replaced = await put(third, { etag: created }, 'quoted');
    if (replaced.kind === 'refused') {
      form = 'bare';
      replaced = await put(third, { etag: created }, 'bare');
    }
    if (replaced.kind === 'refused')
      throw unsafe(
        io,
        GUARANTEES.currentEtag,
        'If-Match with the current ETag was refused, quoted and bare',
      );
    expectWritten(io, replaced, GUARANTEES.currentEtag, 'If-Match with the current ETag');

    const stale = await put(body(4), { etag: created }, form);
    if (stale.kind === 'written')
      throw unsafe(io, GUARANTEES.replaceRead, 'a PUT with a stale If-Match replaced the object');
    if (stale.kind === 'unclear')
      throw unsafe(io, GUARANTEES.replaceRead, 'If-Match is not implemented (HTTP 501)');

    const seen = await io.get('probe', key);
    if (seen?.body !== third)
      throw unsafe(io, GUARANTEES.replaceRead, 'a write it answered as refused landed anyway');
    return form;
  } finally {
    await io.delete('probe', key).catch(() => {});
  }
}

/** The ETag of a write that must have landed; a 501 means the condition is not implemented. */
function expectWritten(io: ObjectIo, result: PutResult, guarantee: string, what: string): string {
  if (result.kind === 'written') return result.etag;
  if (result.kind === 'unclear') {
    if (statusOf(result.error) === 501)
      throw unsafe(io, guarantee, `${what} is not implemented (HTTP 501)`, result.error);
    throw result.error;
  }
  throw unsafe(io, guarantee, `${what} was refused`);
}
