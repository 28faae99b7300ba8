import { describe, expect, it } from 'vitest';
import { HoldOffs } from '../../src/fleet/hold-offs.js';
import { ManualClock } from '../../src/testing/index.js';

const SCAN = 1_000;

function rig(): { clock: ManualClock; holdOffs: HoldOffs } {
  const clock = new ManualClock();
  return { clock, holdOffs: new HoldOffs(clock, SCAN) };
}

describe('HoldOffs', () => {
  it('remembers a refusal for most of a scan (0.8 of it), then forgets it', async () => {
    const { clock, holdOffs } = rig();
    holdOffs.refused('a');
    await clock.advance(0.8 * SCAN);
    holdOffs.forgetRefusals(clock.monotonic());
    expect(holdOffs.isRefused('a')).toBe(true);
    await clock.advance(1);
    expect(holdOffs.isRefused('a')).toBe(true); // forgotten only when told to
    holdOffs.forgetRefusals(clock.monotonic());
    expect(holdOffs.isRefused('a')).toBe(false);
  });

  it('hands out what the store announced free once, less what was taken again or is stale', async () => {
    const { clock, holdOffs } = rig();
    expect(holdOffs.hasFreed()).toBe(false);
    holdOffs.freed('old');
    await clock.advance(0.5 * SCAN);
    holdOffs.freed('a');
    holdOffs.freed('b');
    holdOffs.takenAgain('b');
    await clock.advance(0.4 * SCAN); // 'old' is 0.9 of a scan old now
    holdOffs.forgetStale(clock.monotonic(), new Map());
    expect(holdOffs.hasFreed()).toBe(true);
    expect(holdOffs.takeFreed()).toEqual(['a']);
    expect(holdOffs.hasFreed()).toBe(false);
    expect(holdOffs.takeFreed()).toEqual([]);
  });

  it('leaves a resource it handed over to its taker for half a scan, or a scan and a half where releases are not announced', async () => {
    for (const [announced, window] of [
      [true, SCAN / 2],
      [false, 1.5 * SCAN],
    ] as const) {
      const clock = new ManualClock();
      const holdOffs = new HoldOffs(clock, SCAN, announced);
      expect(holdOffs.justGave('r', clock.monotonic())).toBe(false);
      holdOffs.gave('r');
      await clock.advance(window - 1);
      expect(holdOffs.justGave('r', clock.monotonic())).toBe(true);
      expect(holdOffs.justGave('other', clock.monotonic())).toBe(false);
      await clock.advance(1);
      expect(holdOffs.justGave('r', clock.monotonic())).toBe(false);
    }
  });

  it('lets a resource that does not fit be taken once it stayed free for half a scan', async () => {
    const { clock, holdOffs } = rig();
    expect(holdOffs.leftFreeLong('r', clock.monotonic())).toBe(false); // first seen now
    await clock.advance(SCAN / 2 - 1);
    expect(holdOffs.leftFreeLong('r', clock.monotonic())).toBe(false);
    await clock.advance(1);
    expect(holdOffs.leftFreeLong('r', clock.monotonic())).toBe(true);
  });

  it('forgets a resource left free once it is held here, or after four scans', async () => {
    const { clock, holdOffs } = rig();
    holdOffs.leftFreeLong('held', 0);
    holdOffs.leftFreeLong('old', 0);
    await clock.advance(SCAN);
    holdOffs.forgetStale(clock.monotonic(), new Map([['held', true]]));
    // 'held' starts again from now; 'old' is still remembered from 0.
    expect(holdOffs.leftFreeLong('held', clock.monotonic())).toBe(false);
    expect(holdOffs.leftFreeLong('old', clock.monotonic())).toBe(true);
    await clock.advance(3 * SCAN + 1);
    holdOffs.forgetStale(clock.monotonic(), new Map());
    expect(holdOffs.leftFreeLong('old', clock.monotonic())).toBe(false);
  });

  it('holds a search of every record off for most of a scan after a join or a search, not after a leave', async () => {
    const { clock, holdOffs } = rig();
    expect(holdOffs.maySearch(clock.monotonic())).toBe(true);
    holdOffs.dealt(false); // the members grew (or the wanted set changed)
    await clock.advance(0.8 * SCAN);
    expect(holdOffs.maySearch(clock.monotonic())).toBe(false);
    await clock.advance(1);
    expect(holdOffs.maySearch(clock.monotonic())).toBe(true);
    holdOffs.searched(clock.monotonic());
    await clock.advance(SCAN / 2);
    expect(holdOffs.maySearch(clock.monotonic())).toBe(false);
    holdOffs.searchAgain(); // what it found free, others took first
    expect(holdOffs.maySearch(clock.monotonic())).toBe(true);
    holdOffs.dealt(false);
    expect(holdOffs.maySearch(clock.monotonic())).toBe(false);
    holdOffs.dealt(true); // members only left: nobody sheds, search at once
    expect(holdOffs.maySearch(clock.monotonic())).toBe(true);
  });
});
