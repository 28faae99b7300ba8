import { checkResource, checkToken } from '../core/options.js';
import { fenceKey, type FencedLease } from './fence.js';

/**
 * The fencing check for a downstream that is not SQL, kept in memory: accepts a token at least as
 * high as the highest seen for the resource and remembers it. It protects only writes that pass
 * through this one object; a resource with several front ends needs the check where the data lives
 * (a conditional write, a compare in the UPDATE), as `SqliteFence` and `PostgresFence` do.
 */
export class FenceGuard {
  private readonly seen = new Map<string, number>();

  /** Whether a write under `token` may go ahead; when it may, `token` becomes the highest seen. */
  check(resource: string, token: number): boolean;
  /** The same under `lease` (a `HeldLease`): a counting lease is checked per permit. */
  check(lease: FencedLease): boolean;
  check(first: string | FencedLease, second?: number): boolean {
    const { resource, token } =
      typeof first === 'string'
        ? { resource: checkResource(first), token: checkToken(second) }
        : fenceKey(first);
    const highest = this.seen.get(resource);
    if (highest !== undefined && token < highest) return false;
    this.seen.set(resource, token);
    return true;
  }

  /** The highest token accepted for `resource` (or a lease's permit), or `null` before the first. */
  highest(target: string | FencedLease): number | null {
    const resource = typeof target === 'string' ? checkResource(target) : fenceKey(target).resource;
    return this.seen.get(resource) ?? null;
  }
}
