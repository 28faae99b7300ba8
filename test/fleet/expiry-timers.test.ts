import { describe, expect, it } from 'vitest';
import type { LeaseRecord } from '../../src/core/lease.js';
import { ExpiryTimers } from '../../src/fleet/expiry-timers.js';
import { ManualClock } from '../../src/testing/index.js';

const TTL = 10_000;
const BEAT = 2_000;

function rig(): { clock: ManualClock; timers: ExpiryTimers; fired: string[] } {
  const clock = new ManualClock();
  const fired: string[] = [];
  const timers = new ExpiryTimers(
    clock,
    { ttlMs: TTL, heartbeatMs: BEAT, graceMs: 100, storeNow: () => clock.now() },
    (resource, member) => fired.push(`${member ? 'member' : 'resource'} ${resource}`),
  );
  return { clock, timers, fired };
}

const record = (
  resource: string,
  owner: string,
  expiresIn: number,
  clock: ManualClock,
): LeaseRecord => ({
  resource,
  owner,
  token: 1,
  expiresAt: clock.now() + expiresIn,
  data: null,
});

describe('ExpiryTimers', () => {
  it('fires just after a record that is not being renewed expires, and not for a renewed one', async () => {
    const { clock, timers, fired } = rig();
    timers.armTakeover(record('stale', 'b', 3_000, clock)); // due well before a renewed one
    timers.armTakeover(record('renewed', 'b', TTL, clock)); // just renewed: no timer
    timers.armTakeover(record('free', '', 1_000, clock)); // nobody holds it: no timer
    await clock.advance(3_000 + 100); // expired, within the grace
    expect(fired).toEqual([]);
    await clock.advance(100); // past the grace (and the jitter of at most 50 ms)
    expect(fired).toEqual(['resource stale']);
    await clock.advance(TTL);
    expect(fired).toEqual(['resource stale']);
  });

  it("arms the members' records but this worker's own, and one timer per record", async () => {
    const { clock, timers, fired } = rig();
    const records = [record('m/a', 'a', 2_000, clock), record('m/me', 'me', 2_000, clock)];
    timers.armMembers(records, 'me');
    timers.armMembers(records, 'me'); // armed already: still one
    await clock.advance(3_000);
    expect(fired).toEqual(['member m/a']);
  });

  it('retries a resource already expired by its clock a little later; drops a member already gone', async () => {
    const { clock, timers, fired } = rig();
    timers.armTakeover(record('late', 'b', -500, clock));
    timers.armMembers([record('m/gone', 'gone', -500, clock)], 'me');
    await clock.advance(BEAT / 4 + 60);
    expect(fired).toEqual(['resource late']);
  });

  it('arms nothing after clear(true); clear() alone lets later records be armed', async () => {
    const { clock, timers, fired } = rig();
    timers.armTakeover(record('x', 'b', 1_000, clock));
    timers.clear();
    timers.armTakeover(record('y', 'b', 1_000, clock));
    timers.clear(true);
    timers.armTakeover(record('z', 'b', 1_000, clock));
    await clock.advance(5_000);
    expect(fired).toEqual([]);
    timers.clear();
    timers.armTakeover(record('w', 'b', 1_000, clock));
    await clock.advance(5_000);
    expect(fired).toEqual([]); // stopped for good
  });
});
