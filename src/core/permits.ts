import { invalidArgument } from './errors.js';
import { checkResource } from './options.js';
import { PERMIT_MARK } from './record-marks.js';

export { PERMIT_MARK };

// The records of a counting lease named `name` with N permits: permit 0 is the record `name`
// itself (so `permits: 1` is exactly the exclusive lease on `name`), permit i > 0 the record
// `name` + `PERMIT_MARK` + i (core/record-marks.ts), so a name's permits sort right after it and
// one `list` page starting at `name` reads them all.

/** The record that holds permit `permit` of `name`. */
export function permitResource(name: string, permit: number): string {
  return permit === 0 ? name : `${name}${PERMIT_MARK}${permit}`;
}

/** Names asked for lately, with their permits' records: a waiter asks at every attempt. */
const recent = new Map<string, readonly string[]>();
const RECENT_MAX = 256;

/**
 * The records of permits 0 … `permits` − 1 of `name`, each checked as a resource name (a name
 * too long to carry the suffix is refused here, naming the permit).
 */
export function permitResources(name: string, permits: number): readonly string[] {
  const key = `${permits}\u0000${name}`;
  const known = recent.get(key);
  if (known) return known;
  const made = Object.freeze(makePermitResources(name, permits));
  if (recent.size >= RECENT_MAX) recent.clear();
  recent.set(key, made);
  return made;
}

function makePermitResources(name: string, permits: number): string[] {
  const resources = Array.from({ length: permits }, (_, i) => permitResource(name, i));
  const longest = resources[resources.length - 1]!;
  try {
    checkResource(longest);
  } catch {
    throw invalidArgument(
      'resource',
      `is too long for ${permits} permits: permit ${permits - 1} is stored as ${JSON.stringify(name)} plus ${JSON.stringify(longest.slice(name.length))}, over the 512-byte name limit`,
    );
  }
  return resources;
}

/** The name and permit index a record stands for: `{ name: resource, permit: 0 }` for a plain record. */
export function parsePermit(resource: string): {
  /** The name the permit belongs to (the record key itself for a plain record). */
  name: string;
  /** The permit's index, 0 for the name's own record. */
  permit: number;
} {
  const mark = resource.lastIndexOf(PERMIT_MARK);
  if (mark > 0) {
    const digits = resource.slice(mark + PERMIT_MARK.length);
    if (/^[1-9][0-9]{0,5}$/.test(digits))
      return { name: resource.slice(0, mark), permit: Number(digits) };
  }
  return { name: resource, permit: 0 };
}

/** Whether a record is one of permits 0 … `permits` − 1 of `name` (what a waiter for it wakes on). */
export function permitMatcher(name: string, permits: number): (resource: string) => boolean {
  if (permits === 1) return (resource) => resource === name;
  return (resource) => {
    const p = parsePermit(resource);
    return p.name === name && p.permit < permits;
  };
}
