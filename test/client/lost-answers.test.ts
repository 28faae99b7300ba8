import { afterEach, describe, expect, it } from 'vitest';
import { LeaseClient, MemoryStore } from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { losingAnswers } from '../harness/lost-answers.js';

const clients: LeaseClient[] = [];
afterEach(async () => void (await Promise.allSettled(clients.splice(0).map((c) => c.close()))));

function rig() {
  const clock = new ManualClock();
  const real = new MemoryStore({ clock });
  const losing = losingAnswers(real);
  const client = new LeaseClient({
    store: losing.store,
    owner: 'me',
    ttlMs: 1000,
    heartbeatMs: 250,
    clock,
  });
  const other = new LeaseClient({
    store: real,
    owner: 'other',
    ttlMs: 1000,
    heartbeatMs: 250,
    clock,
  });
  clients.push(client, other);
  return { clock, real, client, other, ...losing };
}

describe('a client whose answers are lost', () => {
  it('keeps a lease whose renewal landed but whose answer was lost (dynamolock #280)', async () => {
    const { clock, client, other, lose, applied } = rig();
    const lease = (await client.tryAcquire('job'))!;
    lose('renewMany');
    lose('renew');
    for (let i = 0; i < 12; i++) {
      await clock.advance(250);
      expect(await other.tryAcquire('job')).toBeNull();
    }
    expect(applied).toHaveLength(1); // one renewal landed unseen
    expect(lease.state).toBe('held');
    expect(lease.signal.aborted).toBe(false);
  });

  it('never releases the next holder when its release is tried again', async () => {
    const { client, real, lose, applied } = rig();
    const lease = (await client.tryAcquire('job'))!;
    lose('release');
    await lease.release().catch(() => undefined);
    expect(applied).toEqual([true]);
    const next = (await real.tryAcquire('job', 'other', 5000))!;
    await lease.release().catch(() => undefined); // whatever it does, the other's lease stands
    expect(await real.get('job')).toMatchObject({ owner: 'other', token: next.token });
  });
});
