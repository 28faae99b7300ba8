import { expect, it } from 'vitest';
import { elect, isLeaseError, LIMITS, MemoryStore } from '../../src/index.js';

const store = new MemoryStore();
const NAME_MAX_BYTES = LIMITS.resourceMaxBytes - 'election/'.length;

/** The error `elect` throws for `name`, without starting a campaign. */
function nameError(name: string): unknown {
  try {
    const election = elect({ store, name, onElected: () => undefined });
    void election.stop();
  } catch (error) {
    return error;
  }
  return undefined;
}

it('states the limit of the name itself, not of the resource with its election/ prefix', () => {
  const error = nameError('n'.repeat(NAME_MAX_BYTES + 1));
  expect(isLeaseError(error, 'INVALID_ARGUMENT')).toBe(true);
  expect((error as Error).message).toBe(
    `name must be at most ${NAME_MAX_BYTES} UTF-8 bytes (the lease is taken on "election/<name>"), got ${NAME_MAX_BYTES + 1}`,
  );
  const multibyte = nameError('é'.repeat(300));
  expect((multibyte as Error).message).toMatch(
    new RegExp(`^name must be at most ${NAME_MAX_BYTES} UTF-8 bytes .*, got 600$`),
  );
});

it('accepts a name of exactly the limit and still rejects an empty one', async () => {
  const election = elect({ store, name: 'n'.repeat(NAME_MAX_BYTES), onElected: () => undefined });
  await election.stop();
  expect((nameError('') as Error).message).toBe('name must not be empty');
});
