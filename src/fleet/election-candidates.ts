import { invalidArgument } from '../core/errors.js';
import { checkInteger, describe, LIMITS } from '../core/options.js';
import { isLive } from '../core/lease.js';
import { CANDIDATE_MARK } from '../core/record-marks.js';
import type { LeaseStore } from '../core/store.js';
import type { Clock } from '../core/time.js';
import type { LeaseClient } from '../client/lease-client.js';
import type { ElectOptions } from './election-options.js';
import { RESOURCE_PREFIX } from './election-record.js';

export { CANDIDATE_MARK };

/**
 * The priority a registration's name gives after `CANDIDATE_MARK` (`<priority>:<owner>`), or
 * `undefined` when the rest is not one.
 */
export function registrationPriority(rest: string): number | undefined {
  const colon = rest.indexOf(':');
  const priority = colon < 0 ? NaN : Number(rest.slice(0, colon));
  return Number.isFinite(priority) ? priority : undefined;
}

/** A candidate's priority, hold-off and registration, checked; `undefined` without a priority. */
export function checkPreference(
  options: ElectOptions,
  resource: string,
  client: LeaseClient,
): { priority: number; holdOffMs: number; registration: string } | undefined {
  const { priority, holdOffMs } = options;
  if (priority === undefined) {
    if (holdOffMs !== undefined)
      throw invalidArgument('holdOffMs', 'needs priority: only a candidate with a priority yields');
    return undefined;
  }
  if (typeof priority !== 'number' || !Number.isFinite(priority))
    throw invalidArgument('priority', `must be a finite number, got ${describe(priority)}`);
  const holdOff = checkInteger(
    'holdOffMs',
    holdOffMs ?? 2 * client.ttlMs,
    0,
    Number.MAX_SAFE_INTEGER,
  );
  const registration = `${resource}${CANDIDATE_MARK}${String(priority)}:${client.owner}`;
  const bytes = Buffer.byteLength(registration, 'utf8');
  if (bytes > LIMITS.resourceMaxBytes)
    throw invalidArgument(
      'priority',
      `needs a registration "${RESOURCE_PREFIX}<name>\\u0001candidate=<priority>:<owner>" of at most ${LIMITS.resourceMaxBytes} UTF-8 bytes, got ${bytes}: use a shorter name or owner`,
    );
  return { priority, holdOffMs: holdOff, registration };
}

/** A live registration of a candidate of higher priority: `key` tells one registration from the next. */
export interface CandidateSeen {
  readonly key: string;
}

/** The registrations of an election's candidates, as `list` shows them. */
export class Candidates {
  private readonly prefix: string;

  constructor(
    private readonly store: LeaseStore,
    resource: string,
    private readonly owner: string,
    private readonly clock: Clock,
  ) {
    this.prefix = `${resource}${CANDIDATE_MARK}`;
  }

  /** The live registrations of other candidates with a priority above `priority`. */
  async above(priority: number): Promise<CandidateSeen[]> {
    const records = await this.store.list({ prefix: this.prefix, limit: LIMITS.listMaxLimit });
    const now = this.clock.now();
    const allowance = this.store.maxClockSkewMs + (this.store.expiryLagMs ?? 0);
    const out: CandidateSeen[] = [];
    for (const record of records) {
      if (record.owner === this.owner || !isLive(record, now, allowance)) continue;
      const theirs = registrationPriority(record.resource.slice(this.prefix.length));
      if (theirs !== undefined && theirs > priority)
        out.push({ key: `${record.resource}#${record.token}` });
    }
    return out;
  }
}
