import { invalidArgument } from '../core/errors.js';
import { checkResource, LIMITS } from '../core/options.js';
import { isLive, type LeaseData } from '../core/lease.js';
import type { LeaseStore } from '../core/store.js';
import type { Clock } from '../core/time.js';

/** Every election's lease is taken on `election/<name>`. */
export const RESOURCE_PREFIX = 'election/';

/** The longest election name, in UTF-8 bytes: `election/<name>` must be a valid resource name. */
const ELECTION_NAME_MAX_BYTES = LIMITS.resourceMaxBytes - RESOURCE_PREFIX.length;

/** Checks a name as a resource name, against the room left after the `election/` prefix. */
export function checkElectionName(name: unknown): string {
  const bytes = typeof name === 'string' ? Buffer.byteLength(name, 'utf8') : 0;
  if (bytes > ELECTION_NAME_MAX_BYTES)
    throw invalidArgument(
      'name',
      `must be at most ${ELECTION_NAME_MAX_BYTES} UTF-8 bytes (the lease is taken on "${RESOURCE_PREFIX}<name>"), got ${bytes}`,
    );
  return checkResource(name, 'name');
}

/** Who leads an election now, as the store has it. */
export interface LeaderInfo {
  /** The leader's owner id. */
  readonly owner: string;
  /** The term's fencing token: rises with every new term. */
  readonly token: number;
  /** What the leader published for this term (`ElectOptions.data`); `null` until it has. */
  readonly data: LeaseData | null;
  /** When the term lapses unless renewed, on the store's time. */
  readonly expiresAt: number;
}

/** The record's data for a term: the term's token and the candidate's value, as JSON text. */
export function termData(token: number, data: LeaseData): string {
  return JSON.stringify(
    typeof data === 'string'
      ? { term: token, text: data }
      : { term: token, base64: Buffer.from(data).toString('base64') },
  );
}

/** The value published for term `token`, or `null` when the data is another term's (or none). */
function termValue(data: LeaseData | null | undefined, token: number): LeaseData | null {
  if (typeof data !== 'string') return null;
  try {
    const value = JSON.parse(data) as { term?: unknown; text?: unknown; base64?: unknown };
    if (value.term !== token) return null;
    if (typeof value.text === 'string') return value.text;
    if (typeof value.base64 === 'string')
      return new Uint8Array(Buffer.from(value.base64, 'base64'));
  } catch {
    // not an election's data
  }
  return null;
}

/** Who leads as the election's record has it: its live holder and the value of its term. */
export async function readLeader(
  store: LeaseStore,
  resource: string,
  clock: Clock,
): Promise<LeaderInfo | null> {
  const record = await store.get(resource);
  // A lapsed term has no leader, judged as a contender would (the store's allowance included).
  const allowance = store.maxClockSkewMs + (store.expiryLagMs ?? 0);
  if (!record || !isLive(record, clock.now(), allowance)) return null;
  return {
    owner: record.owner,
    token: record.token,
    data: termValue(record.data, record.token),
    expiresAt: record.expiresAt,
  };
}
