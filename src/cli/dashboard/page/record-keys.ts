import {
  CANDIDATE_MARK,
  PERMIT_MARK,
  QUEUE_MARK,
  TICKET_MARK,
} from '../../../core/record-marks.js';
import { INTERNAL_PREFIX } from '../../live/lease-state.js';

// Record keys as src/cli/record-key.ts reads them: a name's permits, its fair line and its
// election candidates.

/** What a record key stands for: `index` is the permit, the fair line's slot, or the priority. */
export interface RecordKey {
  readonly name: string;
  readonly kind: 'permit' | 'place' | 'ticket' | 'candidate';
  readonly index: number;
}

/** The name and part a record key stands for. */
export function parseKey(resource: string): RecordKey {
  const c = resource.indexOf(CANDIDATE_MARK);
  if (c > 0) {
    const rest = resource.slice(c + CANDIDATE_MARK.length);
    const priority = Number(rest.slice(0, rest.indexOf(':')));
    if (rest.indexOf(':') >= 0 && Number.isFinite(priority))
      return { name: resource.slice(0, c), kind: 'candidate', index: priority };
  }
  const q = resource.lastIndexOf(QUEUE_MARK);
  if (q > 0 && /^[0-9]{3}$/.test(resource.slice(q + QUEUE_MARK.length)))
    return {
      name: resource.slice(0, q),
      kind: 'place',
      index: Number(resource.slice(q + QUEUE_MARK.length)),
    };
  if (resource.length > TICKET_MARK.length && resource.slice(-TICKET_MARK.length) === TICKET_MARK)
    return { name: resource.slice(0, -TICKET_MARK.length), kind: 'ticket', index: 0 };
  const m = resource.lastIndexOf(PERMIT_MARK);
  if (m > 0 && /^[1-9][0-9]{0,5}$/.test(resource.slice(m + PERMIT_MARK.length)))
    return {
      name: resource.slice(0, m),
      kind: 'permit',
      index: Number(resource.slice(m + PERMIT_MARK.length)),
    };
  return { name: resource, kind: 'permit', index: 0 };
}

/** Orders strings by code unit, as the server does. */
export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function keyRank(key: RecordKey): number {
  if (key.kind === 'permit') return key.index;
  if (key.kind === 'place') return 1e6 + key.index;
  return key.kind === 'ticket' ? 2e6 : 3e6;
}

/** By name, then permits in number order, the fair line, candidates from the highest priority. */
export function cmpKeys(a: RecordKey, b: RecordKey): number {
  return (
    cmp(a.name, b.name) ||
    keyRank(a) - keyRank(b) ||
    (a.kind === 'candidate' ? b.index - a.index : 0)
  );
}

/** leasehold's own records and the records around a lease (fair lines, candidates). */
export function isInternal(resource: string): boolean {
  return resource.indexOf(INTERNAL_PREFIX) === 0 || parseKey(resource).kind !== 'permit';
}

/** A record's key as text, seen alone: permit 0 is the bare name. */
export function keyLabel(resource: string): string {
  const key = parseKey(resource);
  if (key.kind === 'permit') return key.index > 0 ? `${key.name} · permit ${key.index}` : key.name;
  if (key.kind === 'candidate') return `${key.name} · candidate, priority ${key.index}`;
  return key.name + (key.kind === 'place' ? ' · fair line' : ' · fair line ticket');
}

/** The waiter in a fair-line place's owner (a 16-digit ticket, '|', the waiter). */
export function waiterOf(owner: string): string {
  return /^[0-9]{16}\|/.test(owner) ? owner.slice(17) : owner;
}
