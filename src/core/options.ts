import { ErrorCode, invalidArgument, LeaseError } from './errors.js';
import type { Lease, LeaseRef } from './lease.js';
import { yieldToLoop } from './time.js';

/** Limits every store and the client enforce, so any name that passes round-trips on every store. */
export const LIMITS = Object.freeze({
  /** The longest resource name, in UTF-8 bytes. */
  resourceMaxBytes: 512,
  /** The longest owner name, in UTF-8 bytes. */
  ownerMaxBytes: 256,
  /** The shortest TTL, in ms. */
  ttlMinMs: 100,
  /** The longest TTL, in ms (one day). */
  ttlMaxMs: 24 * 60 * 60 * 1000,
  /** The largest `limit` one `list` call accepts. */
  listMaxLimit: 100_000,
  /** The most resources one `acquireMany` call takes. */
  batchMaxSize: 10_000,
  /**
   * The most permits a counting lease may have: each permit is a record of its own, and a caller
   * that finds all busy reads them in one `list` page.
   */
  permitsMax: 1_000,
  /**
   * The most resources one all-or-nothing group (`acquireAll`) may hold: one etcd transaction, one
   * ZooKeeper `multi`, one SQL statement or one Redis script carries all of them.
   */
  groupMaxSize: 100,
  /**
   * The largest lease data value, in bytes (UTF-8 for a string). 4 KiB holds a checkpoint, an
   * offset vector or a leader's address many times over, and keeps a record small enough that
   * every store carries it in the same request as the grant: one etcd or ZooKeeper operation, one
   * Redis hash field, one DynamoDB item far below its 400 KB, one NATS message, one S3 object, one
   * SQL row kept inline (PostgreSQL moves values above about 2 KB out of line, still in one
   * statement). Renewals never rewrite it, so its size does not cost on the heartbeat.
   */
  dataMaxBytes: 4096,
});

/** UTF-8 length, computed only when the string could be over `max` (each UTF-16 unit is at most 3 bytes). */
function overBytes(value: string, max: number): number | undefined {
  if (value.length * 3 <= max) return undefined;
  const bytes = Buffer.byteLength(value, 'utf8');
  return bytes > max ? bytes : undefined;
}

function checkName(field: string, value: unknown, maxBytes: number): string {
  if (typeof value !== 'string')
    throw invalidArgument(field, `must be a string, got ${describe(value)}`);
  if (value.length === 0) throw invalidArgument(field, 'must not be empty');
  if (!value.isWellFormed())
    throw invalidArgument(field, 'must be well-formed UTF-16 (it has a lone surrogate)');
  if (value.includes('\u0000')) throw invalidArgument(field, 'must not contain the NUL character');
  const bytes = overBytes(value, maxBytes);
  if (bytes !== undefined)
    throw invalidArgument(field, `must be at most ${maxBytes} UTF-8 bytes, got ${bytes}`);
  return value;
}

export function checkResource(value: unknown, field = 'resource'): string {
  return checkName(field, value, LIMITS.resourceMaxBytes);
}

export function checkOwner(value: unknown, field = 'owner'): string {
  return checkName(field, value, LIMITS.ownerMaxBytes);
}

/** An integer number of milliseconds within `[min, max]`. */
export function checkInteger(field: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw invalidArgument(
      field,
      `must be an integer number of milliseconds, got ${describe(value)}`,
    );
  }
  if (value < min || value > max)
    throw invalidArgument(field, `must be from ${min} to ${max}, got ${value}`);
  return value;
}

export function checkTtl(value: unknown, field = 'ttlMs'): number {
  return checkInteger(field, value, LIMITS.ttlMinMs, LIMITS.ttlMaxMs);
}

export function checkToken(value: unknown, field = 'token'): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw invalidArgument(field, `must be a positive safe integer, got ${describe(value)}`);
  }
  return value;
}

/** Checks a lease reference handed back to a store: the fields a release compares. */
export function checkLeaseRef(value: unknown, field = 'lease'): LeaseRef {
  if (typeof value !== 'object' || value === null)
    throw invalidArgument(field, `must be a lease object, got ${describe(value)}`);
  const lease = value as Record<string, unknown>;
  checkResource(lease.resource, `${field}.resource`);
  checkOwner(lease.owner, `${field}.owner`);
  checkToken(lease.token, `${field}.token`);
  return value as LeaseRef;
}

/** Checks a lease handed back to a store for renewal: a reference plus the TTL it was granted with. */
export function checkLease(value: unknown, field = 'lease'): Lease {
  checkLeaseRef(value, field);
  checkTtl((value as Lease).ttlMs, `${field}.ttlMs`);
  return value as Lease;
}

export function checkLeases(value: unknown, field = 'leases'): readonly Lease[] {
  return checkArray(value, field, checkLease);
}

export function checkLeaseRefs(value: unknown, field = 'leases'): readonly LeaseRef[] {
  return checkArray(value, field, checkLeaseRef);
}

function checkArray<T>(
  value: unknown,
  field: string,
  check: (v: unknown, f: string) => T,
): readonly T[] {
  if (!Array.isArray(value))
    throw invalidArgument(field, `must be an array, got ${describe(value)}`);
  value.forEach((item, i) => check(item, `${field}[${i}]`));
  return value as T[];
}

/**
 * Items checked per turn of the event loop by `checkInTurns`: 10,000 leases took 3–5 ms on a
 * loaded 2-core machine, where 100,000 in one go held the loop 30–50 ms.
 */
export const CHECKED_PER_TURN = 5_000;

/**
 * `checkLeases` / `checkLeaseRefs` for a batch of any size without holding the event loop for
 * long (design rule 6): a longer array is copied first (so what was checked is what is sent,
 * whatever the caller does with its array meanwhile) and checked `CHECKED_PER_TURN` items per
 * turn. Every item is checked before the store is called.
 */
export async function checkInTurns<T>(
  value: unknown,
  check: (v: unknown, f: string) => T,
  field = 'leases',
): Promise<readonly T[]> {
  if (!Array.isArray(value))
    throw invalidArgument(field, `must be an array, got ${describe(value)}`);
  if (value.length <= CHECKED_PER_TURN) return checkArray(value, field, check);
  const copy: unknown[] = value.slice();
  for (let start = 0; start < copy.length; start += CHECKED_PER_TURN) {
    if (start > 0) await yieldToLoop();
    const end = Math.min(copy.length, start + CHECKED_PER_TURN);
    for (let i = start; i < end; i++) check(copy[i], `${field}[${i}]`);
  }
  return copy as T[];
}

/** Which records `list` returns: a prefix filter and a page. */
export interface ListOptions {
  /** Only records whose resource starts with this string (matched literally: `%` and `_` are not wildcards). */
  prefix?: string;
  /** At most this many records, in resource order. @default 1000 */
  limit?: number;
  /**
   * Only records whose resource sorts after this one: pass the last resource of a page to read the
   * next. @default '' (from the start)
   */
  after?: string;
}

export function checkListOptions(value: unknown): Required<ListOptions> {
  if (value === undefined) return { prefix: '', limit: 1000, after: '' };
  if (typeof value !== 'object' || value === null)
    throw invalidArgument('list options', `must be an object, got ${describe(value)}`);
  const { prefix = '', limit = 1000, after = '' } = value as ListOptions;
  if (after !== '') checkResource(after, 'after');
  if (typeof prefix !== 'string' || !prefix.isWellFormed() || prefix.includes('\u0000')) {
    throw invalidArgument(
      'prefix',
      `must be a well-formed string without NUL, got ${describe(prefix)}`,
    );
  }
  if (overBytes(prefix, LIMITS.resourceMaxBytes) !== undefined) {
    throw invalidArgument('prefix', `must be at most ${LIMITS.resourceMaxBytes} UTF-8 bytes`);
  }
  if (
    typeof limit !== 'number' ||
    !Number.isInteger(limit) ||
    limit < 1 ||
    limit > LIMITS.listMaxLimit
  ) {
    throw invalidArgument(
      'limit',
      `must be an integer from 1 to ${LIMITS.listMaxLimit}, got ${describe(limit)}`,
    );
  }
  return { prefix, limit, after };
}

/** A batch of resource names for `acquireMany`: each valid, no duplicates, at most `LIMITS.batchMaxSize`. */
export function checkResources(value: unknown, field = 'resources'): readonly string[] {
  if (!Array.isArray(value))
    throw invalidArgument(field, `must be an array, got ${describe(value)}`);
  if (value.length > LIMITS.batchMaxSize)
    throw invalidArgument(
      field,
      `must hold at most ${LIMITS.batchMaxSize} names, got ${value.length}`,
    );
  const seen = new Set<string>();
  value.forEach((item, i) => {
    checkResource(item, `${field}[${i}]`);
    if (seen.has(item as string))
      throw invalidArgument(`${field}[${i}]`, `repeats ${JSON.stringify(item)}`);
    seen.add(item as string);
  });
  return value as string[];
}

/**
 * The members of an all-or-nothing group: a non-empty array of valid names without duplicates, at
 * most `LIMITS.groupMaxSize`.
 */
export function checkGroup(value: unknown, field = 'resources'): readonly string[] {
  if (!Array.isArray(value))
    throw invalidArgument(field, `must be an array, got ${describe(value)}`);
  if (value.length === 0) throw invalidArgument(field, 'must name at least one resource');
  if (value.length > LIMITS.groupMaxSize)
    throw invalidArgument(
      field,
      `must hold at most ${LIMITS.groupMaxSize} names (LIMITS.groupMaxSize), got ${value.length}`,
    );
  return checkResources(value, field);
}

/** Refuses an `acquireFirst` candidate list that is empty or longer than `LIMITS.permitsMax`. */
export function invalidCandidates(count: number, field = 'resources'): void {
  if (count === 0) throw invalidArgument(field, 'must name at least one resource');
  if (count > LIMITS.permitsMax)
    throw invalidArgument(
      field,
      `must hold at most ${LIMITS.permitsMax} names (LIMITS.permitsMax), got ${count}`,
    );
}

/** The number of permits of a counting lease: a safe integer from 1 to `LIMITS.permitsMax`. */
export function checkPermits(value: unknown, field = 'permits'): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)
    throw invalidArgument(field, `must be a positive safe integer, got ${describe(value)}`);
  if (value > LIMITS.permitsMax)
    throw invalidArgument(
      field,
      `must be at most ${LIMITS.permitsMax} (LIMITS.permitsMax), got ${value}`,
    );
  return value;
}

export function describe(value: unknown): string {
  if (typeof value === 'string')
    return value.length > 40 ? `a string of length ${value.length}` : JSON.stringify(value);
  if (
    typeof value === 'number' ||
    typeof value === 'boolean' ||
    value === null ||
    value === undefined
  )
    return String(value);
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

/**
 * A table, schema or similar name that is spliced into SQL: a letter or `_` followed by letters,
 * digits or `_`, at most `maxLength` characters (stores leave room for suffixes like `_meta`).
 */
export function checkIdentifier(field: string, value: unknown, maxLength: number): string {
  if (
    typeof value !== 'string' ||
    !/^[A-Za-z_][A-Za-z0-9_]*$/.test(value) ||
    value.length > maxLength
  ) {
    throw invalidArgument(
      field,
      `must be a letter or _ followed by letters, digits or _, at most ${maxLength} characters, got ${describe(value)}`,
    );
  }
  return value;
}

/**
 * The option names of `T`, listed once as an object literal so the compiler flags a name missing
 * from the list or not in `T`.
 */
export function optionKeys<T extends object>(keys: Record<keyof T, true>): readonly string[] {
  return Object.freeze(Object.keys(keys));
}

/**
 * Refuses an options object holding a key outside `known` (a misspelt option would otherwise be
 * ignored silently), naming the key and the nearest known one within three edits, else every
 * known one. Symbol keys are not options and pass.
 */
export function checkKnownKeys(what: string, options: object, known: readonly string[]): void {
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    let nearest: string | undefined;
    let best = 4;
    for (const candidate of known) {
      const distance = editDistance(key, candidate);
      if (distance < best) [nearest, best] = [candidate, distance];
    }
    const hint =
      nearest === undefined
        ? `the known options are ${known.map((k) => JSON.stringify(k)).join(', ')}`
        : `did you mean ${JSON.stringify(nearest)}?`;
    throw new LeaseError(
      ErrorCode.INVALID_ARGUMENT,
      `${what}: unknown option ${JSON.stringify(key)}; ${hint}`,
    );
  }
}

/** Levenshtein distance: the fewest one-character insertions, deletions or substitutions. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitute = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, substitute);
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** `value` when it is a boolean; else `INVALID_ARGUMENT` naming `name`. */
export function checkBoolean(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean')
    throw invalidArgument(name, `must be a boolean, got ${describe(value)}`);
  return value;
}

/** `clock` when it has a `now()` (what stores judging expiry on the caller's clock read). */
export function checkNowClock<C extends { now(): number }>(clock: C): C {
  if (typeof (clock as { now?: unknown } | undefined)?.now !== 'function')
    throw invalidArgument('clock', 'must be an object with a now() method');
  return clock;
}

/** How many calls a store keeps in flight for a batch: an integer from 1 to 256. */
export function checkConcurrency(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value))
    throw invalidArgument('concurrency', `must be an integer, got ${describe(value)}`);
  if (value < 1 || value > 256)
    throw invalidArgument('concurrency', `must be from 1 to 256, got ${value}`);
  return value;
}

/**
 * `value` without its keys whose value is `undefined`: spread over the options a URL gave, it
 * overrides only what the caller set.
 */
export function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
