import { QUEUE_MARK, TICKET_MARK, ticketOf } from '../client/fair-line.js';
import { parsePermit, PERMIT_MARK } from '../core/permits.js';
import { CANDIDATE_MARK, registrationPriority } from '../fleet/election-candidates.js';
import { visible } from './escape.js';

/**
 * What one record is to a person: a permit of a name (permit 0 is the name's own record, so a
 * plain lease is permit 0 of its name), a record of the name's fair line (a waiter's place, or
 * the ticket record that numbers arrivals), or an election candidate's registration (see
 * `ElectOptions.priority`). The record key stays the `resource`; the name and part are read from
 * it with the marks the client writes (`PERMIT_MARK`, `QUEUE_MARK`, `TICKET_MARK`,
 * `CANDIDATE_MARK`).
 */
export type RecordPart =
  | { readonly kind: 'permit'; readonly permit: number }
  | { readonly kind: 'fair-line-place'; readonly slot: number }
  | { readonly kind: 'fair-line-ticket' }
  | { readonly kind: 'candidate'; readonly priority: number };

export interface RecordKey {
  readonly name: string;
  readonly part: RecordPart;
}

export { CANDIDATE_MARK, PERMIT_MARK, QUEUE_MARK, TICKET_MARK };

const SLOT_DIGITS = /^[0-9]{3}$/;

/** The name and part a record key stands for. */
export function parseKey(resource: string): RecordKey {
  const candidate = resource.indexOf(CANDIDATE_MARK);
  const priority =
    candidate > 0
      ? registrationPriority(resource.slice(candidate + CANDIDATE_MARK.length))
      : undefined;
  if (priority !== undefined)
    return { name: resource.slice(0, candidate), part: { kind: 'candidate', priority } };
  const queue = resource.lastIndexOf(QUEUE_MARK);
  if (queue > 0 && SLOT_DIGITS.test(resource.slice(queue + QUEUE_MARK.length)))
    return {
      name: resource.slice(0, queue),
      part: { kind: 'fair-line-place', slot: Number(resource.slice(queue + QUEUE_MARK.length)) },
    };
  if (resource.length > TICKET_MARK.length && resource.endsWith(TICKET_MARK))
    return {
      name: resource.slice(0, -TICKET_MARK.length),
      part: { kind: 'fair-line-ticket' },
    };
  const { name, permit } = parsePermit(resource);
  return { name, part: { kind: 'permit', permit } };
}

/**
 * Whether a record is one of the records around a lease (a fair line's place or ticket, an
 * election candidate's registration), not a permit of the lease itself.
 */
export function isFairLine(key: RecordKey): boolean {
  return key.part.kind !== 'permit';
}

/** The `name` and `permit` fields `--json` output gives beside `resource`: `permit` null for fair-line records. */
export function keyFields(resource: string): { name: string; permit: number | null } {
  const { name, part } = parseKey(resource);
  return { name, permit: part.kind === 'permit' ? part.permit : null };
}

/** What a record of the fair line is for people: the place it holds, or the ticket. */
export interface FairLineView {
  readonly kind: 'place' | 'ticket';
  /** The slot record the place is held in (0 … 255); only for `place`. */
  readonly slot?: number;
  /** 1 for the head of the line, counted over live places by ticket; `null` when the place is not held. */
  readonly place?: number | null;
}

/**
 * Orders record keys as people read them: by name, then permits in number order, then the fair
 * line, then election candidates from the highest priority down.
 */
export function compareKeys(a: RecordKey, b: RecordKey): number {
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  if (a.part.kind === 'candidate' && b.part.kind === 'candidate')
    return b.part.priority - a.part.priority;
  return partRank(a.part) - partRank(b.part);
}

function partRank(part: RecordPart): number {
  if (part.kind === 'permit') return part.permit;
  if (part.kind === 'fair-line-place') return 1_000_000 + part.slot;
  if (part.kind === 'candidate') return 3_000_000;
  return 2_000_000;
}

/** A record as `arrange` needs it: its key and owner. */
export interface Arrangeable {
  readonly resource: string;
  readonly owner: string;
}

/** One record placed for display: its key, its place in the fair line, and the label to show. */
export interface Arranged<T> {
  readonly item: T;
  readonly key: RecordKey;
  /** The text for the resource column, escaped for a terminal. */
  readonly label: string;
  /** The owner as people read it (a fair-line place's owner without the ticket it carries), escaped. */
  readonly owner: string;
  readonly fairLine: FairLineView | undefined;
}

/**
 * Sorts records so that a name's permits follow one another in number order after its own record,
 * with its fair line last, and labels them: `name`, `name  permit 2` (permit 0 shows as
 * `name  permit 0` when the name has other permits among `items`), `name  (fair line, place 3)`.
 * A place's number counts the places of the name's line that `held` says are held, by the ticket
 * in their owners.
 */
export function arrange<T extends Arrangeable>(
  items: readonly T[],
  held: (item: T) => boolean,
): Arranged<T>[] {
  const keyed = items.map((item) => ({ item, key: parseKey(item.resource) }));
  keyed.sort((a, b) => compareKeys(a.key, b.key));
  const withPermits = new Set<string>();
  const waiting = new Map<string, { resource: string; ticket: number }[]>();
  for (const { item, key } of keyed) {
    if (key.part.kind === 'permit' && key.part.permit > 0) withPermits.add(key.name);
    if (key.part.kind === 'fair-line-place' && held(item)) {
      const list = waiting.get(key.name) ?? [];
      list.push({ resource: item.resource, ticket: ticketOf(item.owner) ?? Infinity });
      waiting.set(key.name, list);
    }
  }
  const places = new Map<string, number>();
  for (const list of waiting.values()) {
    list.sort((a, b) => a.ticket - b.ticket || (a.resource < b.resource ? -1 : 1));
    list.forEach((w, i) => places.set(w.resource, i + 1));
  }
  return keyed.map(({ item, key }) => {
    const name = visible(key.name);
    const { part } = key;
    if (part.kind === 'permit') {
      const label =
        part.permit > 0 || withPermits.has(key.name) ? `${name}  permit ${part.permit}` : name;
      return { item, key, label, owner: visible(item.owner), fairLine: undefined };
    }
    if (part.kind === 'fair-line-ticket')
      return {
        item,
        key,
        label: `${name}  (fair line, ticket)`,
        owner: visible(item.owner),
        fairLine: { kind: 'ticket' },
      };
    if (part.kind === 'candidate')
      return {
        item,
        key,
        label: `${name}  (candidate, priority ${part.priority})`,
        owner: visible(item.owner),
        fairLine: undefined,
      };
    const place = places.get(item.resource) ?? null;
    return {
      item,
      key,
      label: `${name}  (fair line, ${place === null ? 'free place' : `place ${place}`})`,
      owner: visible(waiterOf(item.owner)),
      fairLine: { kind: 'place', slot: part.slot, place },
    };
  });
}

/** The label of one record seen alone (`arrange` of it by itself): its permit 0 shows as the bare name. */
export function labelOf(resource: string): string {
  return arrange([{ resource, owner: '' }], () => false)[0]!.label;
}

/** An owner as people read it: for a fair-line place, the waiter without the ticket it carries. */
export function shownOwner(resource: string, owner: string): string {
  return visible(parseKey(resource).part.kind === 'fair-line-place' ? waiterOf(owner) : owner);
}

/** The waiter's name in a fair-line place's owner (`<16-digit ticket>|<owner>`). */
function waiterOf(owner: string): string {
  return ticketOf(owner) === undefined ? owner : owner.slice(17);
}
