import { expect, it } from 'vitest';
import { ErrorCode, type Lease, type LeaseStore } from '../../src/index.js';
import { rejection } from './expect-error.js';

/** Column values written by hand over a record the store wrote: `owner`, `token`, `expires_at`. */
export type RowPatch = Partial<Record<'owner' | 'token' | 'expires_at', unknown>>;

/** One kind of corrupt record, as the columns a hand-written row sets. */
export interface CorruptForm {
  readonly name: string;
  readonly patch: RowPatch;
}

/** What the checks need of a SQL store under test. */
export interface CorruptTarget {
  /** The store, opened once per file. */
  readonly store: () => LeaseStore;
  /** Writes `patch` over the row of `resource` by raw SQL, bypassing leasehold. */
  readonly patch: (resource: string, patch: RowPatch) => Promise<void>;
  /** The row of `resource` exactly as stored (types included), to tell that nothing changed it. */
  readonly snapshot: (resource: string) => Promise<unknown>;
}

let names = 0;

/** A fresh name under a prefix of its own, so `list` of that prefix reads only it. */
function fresh(label: string): { prefix: string; resource: string } {
  const prefix = `corrupt-${++names}-${label}/`;
  return { prefix, resource: `${prefix}r` };
}

async function expectInvalid(call: Promise<unknown>): Promise<void> {
  const error = await rejection(call);
  expect(error.code, error.message).toBe(ErrorCode.RECORD_INVALID);
}

/** Either "not ours" (`notOurs`) or a `RECORD_INVALID` rejection. */
async function notOursOrInvalid(call: Promise<unknown>, notOurs: unknown): Promise<void> {
  const answer = await call.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if ('error' in answer)
    expect((answer.error as { code?: unknown }).code).toBe(ErrorCode.RECORD_INVALID);
  else expect(answer.value).toEqual(notOurs);
}

/**
 * Every acquiring and reading call on the corrupt record of `resource` answers `RECORD_INVALID`
 * (batches as a whole), the record stays exactly as written, and a healthy record named beside
 * it in the same calls is untouched by them and still works afterwards.
 */
async function expectNeverTaken(
  target: CorruptTarget,
  prefix: string,
  resource: string,
): Promise<void> {
  const store = target.store();
  const before = await target.snapshot(resource);
  const healthy = `${prefix}healthy`;
  const first = (await store.tryAcquire(healthy, 'keeper', 60_000))!;
  expect(await store.release(first)).toBe(true);
  const healthyBefore = await target.snapshot(healthy);

  await expectInvalid(store.get(resource));
  await expectInvalid(store.list({ prefix }));
  await expectInvalid(store.tryAcquire(resource, 'taker', 60_000));
  await expectInvalid(store.acquireMany([healthy, resource], 'taker', 60_000));
  await expectInvalid(store.acquireFirst([resource, healthy], 'taker', 60_000));
  await expectInvalid(store.acquireAll([healthy, resource], 'taker', 60_000));
  // The batches failed as a whole: the healthy record was not taken by them.
  expect(await target.snapshot(healthy)).toEqual(healthyBefore);
  // Behind a live healthy record, the corrupt one is still reached, and still fails the call.
  const live = (await store.tryAcquire(healthy, 'keeper', 60_000))!;
  await expectInvalid(store.acquireAll([healthy, resource], 'taker', 60_000));
  await expectInvalid(store.acquireFirst([healthy, resource], 'taker', 60_000));
  expect(await store.release(live)).toBe(true);
  // Asked at the same moment (a store may send them together): each answered for itself.
  const [bad, good] = await Promise.allSettled([
    store.tryAcquire(resource, 'taker', 60_000),
    store.tryAcquire(healthy, 'taker', 60_000),
  ]);
  expect(bad.status).toBe('rejected');
  expect((bad as PromiseRejectedResult).reason).toMatchObject({ code: ErrorCode.RECORD_INVALID });

  expect(await target.snapshot(resource)).toEqual(before);
  expect(good.status).toBe('fulfilled');
  const granted = (good as PromiseFulfilledResult<Lease | null>).value!;
  expect(granted.token).toBeGreaterThan(first.token);
  expect(await store.release(granted)).toBe(true);
}

/**
 * The corrupt-record checks for one SQL store, one test per form and case: a released record
 * made corrupt, and a held one (its holder's renew and release then answer "not ours" or
 * `RECORD_INVALID`, and never change it).
 */
export function corruptRecordTests(target: CorruptTarget, forms: readonly CorruptForm[]): void {
  for (const form of forms) {
    it(`${form.name}: a released record so written is never free`, async () => {
      const store = target.store();
      const { prefix, resource } = fresh('released');
      const lease = (await store.tryAcquire(resource, 'old', 60_000))!;
      expect(await store.release(lease)).toBe(true);
      await target.patch(resource, form.patch);
      await expectNeverTaken(target, prefix, resource);
    });

    it(`${form.name}: a held record so written is not its holder's, nor anyone's`, async () => {
      const store = target.store();
      const { prefix, resource } = fresh('held');
      const lease = (await store.tryAcquire(resource, 'holder', 60_000))!;
      const other = (await store.tryAcquire(`${prefix}other`, 'holder', 60_000))!;
      await target.patch(resource, form.patch);
      const before = await target.snapshot(resource);

      await notOursOrInvalid(store.renew(lease), null);
      await notOursOrInvalid(store.release(lease), false);
      // writeData answers as the store does (it may write the data table): the record stays.
      await store.writeData(lease, 'x').catch(() => false);
      const renewed = await store.renewMany([other, lease]).then(
        (answers) => answers,
        (error: unknown) => error,
      );
      if (Array.isArray(renewed)) {
        expect(renewed[0]).toMatchObject({ resource: other.resource, token: other.token });
        expect(renewed[1]).toBeNull();
      } else {
        expect(renewed).toMatchObject({ code: ErrorCode.RECORD_INVALID });
      }
      await notOursOrInvalid(store.releaseMany([lease]), [false]);
      expect(await target.snapshot(resource)).toEqual(before);
      expect(await store.releaseMany([other, lease])).toEqual([true, false]);

      await expectNeverTaken(target, prefix, resource);
    });
  }
}

/**
 * A released record whose token is `Number.MAX_SAFE_INTEGER`: valid to read, but no higher token
 * can be granted, so every acquire fails with `STORE_UNAVAILABLE`, not retryable (as the stores'
 * own tests of the last token have it), and leaves it as it is.
 */
export function lastTokenTest(target: CorruptTarget, token: unknown): void {
  it('a released record at the largest safe token reads as it is, and is never taken', async () => {
    const store = target.store();
    const { prefix, resource } = fresh('last');
    const lease = (await store.tryAcquire(resource, 'old', 60_000))!;
    expect(await store.release(lease)).toBe(true);
    await target.patch(resource, { token });
    const before = await target.snapshot(resource);
    expect(await store.get(resource)).toMatchObject({ token: Number.MAX_SAFE_INTEGER, owner: '' });
    for (const call of [
      () => store.tryAcquire(resource, 'taker', 60_000),
      () => store.acquireMany([resource], 'taker', 60_000),
      () => store.acquireFirst([resource], 'taker', 60_000),
      () => store.acquireAll([resource, `${prefix}x`], 'taker', 60_000),
    ]) {
      const error = await rejection(call());
      expect([error.code, error.retryable], error.message).toEqual([
        ErrorCode.STORE_UNAVAILABLE,
        false,
      ]);
    }
    expect(await target.snapshot(resource)).toEqual(before);
    expect(await store.get(`${prefix}x`)).toBeNull();
  });
}
