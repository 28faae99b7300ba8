import { ErrorCode, LeaseError } from '../core/errors.js';
import { checkResource } from '../core/options.js';

/** Where memberships and bucket leases live: no resource of a plain fleet. */
export const RESERVED = ['leasehold/members/', 'leasehold/bucket-members/', 'leasehold/buckets/'];

/**
 * The wanted set a `resources` option gave (its array, or what its function returned), checked
 * and without repeats, in first-seen order: `INVALID_ARGUMENT` for what is not an array of valid
 * resource names, and, with `plain`, for a name under a prefix the fleet itself writes.
 */
export function checkWanted(list: unknown, plain: boolean): string[] {
  if (!Array.isArray(list))
    throw new LeaseError(
      ErrorCode.INVALID_ARGUMENT,
      'resources() must return an array of resource names',
    );
  const unique = [...new Set<unknown>(list)];
  for (const resource of unique) {
    checkResource(resource);
    const reserved = RESERVED.find((prefix) => (resource as string).startsWith(prefix));
    if (reserved && plain)
      throw new LeaseError(
        ErrorCode.INVALID_ARGUMENT,
        `resource ${JSON.stringify(resource)} is under the reserved prefix ${reserved}`,
      );
  }
  return unique as string[];
}
