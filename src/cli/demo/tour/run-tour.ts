import { setTimeout as sleep } from 'node:timers/promises';
import {
  ErrorCode,
  LeaseClient,
  LeaseError,
  type HeldLease,
  type LeaseStore,
} from '../../../index.js';
import { formatDuration } from '../../duration.js';
import { FencedCounter } from './fenced-counter.js';
import type { Narrator } from './narrator.js';

export const TOUR_RESOURCE = 'report-job';
/** How many heartbeats worker A sends before it freezes: 2.5 TTLs at a quarter TTL each. */
const BEATS = 10;

/**
 * Two workers and a fenced downstream on one store: A holds the lease with heartbeats, freezes,
 * loses it at its deadline; B takes over with a higher token; A's late write is rejected.
 */
export async function runTour(store: LeaseStore, ttlMs: number, say: Narrator): Promise<void> {
  const heartbeatMs = Math.floor(ttlMs / 4);
  const a = new LeaseClient({ store, owner: 'worker-a', ttlMs, heartbeatMs, autoRenew: false });
  const b = new LeaseClient({ store, owner: 'worker-b', ttlMs, heartbeatMs });
  const downstream = new FencedCounter();
  try {
    const heldA = await a.tryAcquire(TOUR_RESOURCE);
    if (!heldA) throw busy();
    say.say(
      'A',
      'acquired',
      `acquired "${TOUR_RESOURCE}" with token ${heldA.token}; the store expires it ${until(heldA)}`,
      {
        token: heldA.token,
      },
    );
    let abortedAt: number | undefined;
    heldA.on('at-risk', (reason) => say.say('A', 'at-risk', `at risk: ${reason}`));
    heldA.signal.addEventListener('abort', () => {
      abortedAt = say.elapsed();
      const reason = heldA.signal.reason as LeaseError;
      say.say(
        'A',
        'aborted',
        `signal aborted (${reason.code}): work tied to the lease must stop now`,
        {
          code: reason.code,
        },
      );
    });
    write(say, downstream, 'A', heldA.token);

    const firstTry = await b.tryAcquire(TOUR_RESOURCE);
    if (firstTry)
      throw new Error('worker B acquired a lease worker A holds: the store broke exclusivity');
    say.say('B', 'refused', `tryAcquire("${TOUR_RESOURCE}"): refused, worker-a holds it`);
    const bWaits = b.acquire(TOUR_RESOURCE, { waitMs: 20 * ttlMs });
    bWaits.catch(() => undefined); // awaited below; this only keeps an early failure from going unhandled
    say.say(
      'B',
      'waiting',
      `waits: acquire("${TOUR_RESOURCE}", { waitMs: ${20 * ttlMs} }) retries with backoff`,
    );

    const heldSince = say.elapsed();
    for (let beat = 1; beat <= BEATS; beat++) {
      await sleep(heartbeatMs);
      await heldA.renew();
      say.say(
        'A',
        'renewed',
        `heartbeat ${beat}/${BEATS}: renewed; store expiry ${until(heldA)}, valid here for ${formatDuration(heldA.remainingMs())}`,
        { beat, remainingMs: Math.round(heldA.remainingMs()) },
      );
    }
    const frozenAt = say.elapsed();
    say.say(
      'A',
      'frozen',
      'freezes: its heartbeats stop (a GC pause, SIGSTOP, a partition); nothing is released',
    );

    const heldB = await bWaits;
    const takenAt = say.elapsed();
    say.say(
      'B',
      'acquired',
      `acquired "${TOUR_RESOURCE}" with token ${heldB.token}, ${takenAt - frozenAt} ms after A froze`,
      { token: heldB.token },
    );
    write(say, downstream, 'B', heldB.token);
    say.say(
      'A',
      'wakes',
      `wakes up: isValid() = ${heldA.isValid()}; a careful worker stops here, this one writes anyway`,
      {
        valid: heldA.isValid(),
      },
    );
    write(say, downstream, 'A', heldA.token);

    await heldB.release();
    const record = await store.get(TOUR_RESOURCE);
    say.say(
      'B',
      'released',
      `released gracefully; the record now reads owner ${JSON.stringify(record?.owner)}, token ${record?.token}, expiresAt ${record?.expiresAt} (the token is kept)`,
      { owner: record?.owner, token: record?.token, expiresAt: record?.expiresAt },
    );
    const gap =
      abortedAt !== undefined && abortedAt <= takenAt
        ? `its signal aborted ${takenAt - abortedAt} ms before B took over`
        : 'its signal had not fired when B took over (a late timer; isValid() read the clock and said no)';
    say.note(
      'summary',
      `summary: A held token ${heldA.token} through ${BEATS} heartbeats (${frozenAt - heldSince} ms), froze, and ${gap}; ` +
        `B took over ${takenAt - frozenAt} ms after the freeze, with token ${heldB.token}; ` +
        `the downstream accepted ${downstream.writes} writes and rejected A's stale token-${heldA.token} write.`,
    );
  } finally {
    await b.close();
    await a.close();
  }
}

function write(say: Narrator, downstream: FencedCounter, who: string, token: number): void {
  const accepted = downstream.write(token);
  say.say(
    'downstream',
    accepted ? 'write-accepted' : 'write-rejected',
    `${accepted ? 'accepts' : 'REJECTS'} ${who}'s write with token ${token} (highest token seen: ${downstream.highestToken})`,
    { writer: who, token, highestToken: downstream.highestToken },
  );
}

function until(held: HeldLease): string {
  return `in ${formatDuration(held.expiresAt - Date.now())}`;
}

function busy(): LeaseError {
  return new LeaseError(
    ErrorCode.LEASE_UNAVAILABLE,
    `"${TOUR_RESOURCE}" is held by someone else in this store; run the tour without --store to use a fresh file`,
    { resource: TOUR_RESOURCE, retryable: true },
  );
}
