import { afterAll, beforeAll, expect, it } from 'vitest';
import { LeaseClient, type HeldLease, type LeaseStore } from '../../src/index.js';
import { parseStoreUrl } from '../../src/core/store-url.js';
import { openZookeeper } from '../../src/stores/zookeeper/open.js';
import { describeServer } from '../harness/describe-server.js';
import { contend, violations, type Tenure } from '../harness/tenures.js';
import { sleep } from '../harness/expect-error.js';
import { waitFor } from '../harness/processes.js';
import { ZookeeperEnsemble, zookeeperUnavailable } from '../harness/zookeeper-server.js';

describeServer('zookeeper store on a three-server ensemble', zookeeperUnavailable(), () => {
  let ensemble: ZookeeperEnsemble;
  const stores: LeaseStore[] = [];
  const clients: LeaseClient[] = [];

  beforeAll(async () => {
    ensemble = await ZookeeperEnsemble.start();
  }, 60_000);
  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await Promise.allSettled(stores.map((s) => s.close()));
    await ensemble?.stop();
  });

  async function client(owner: string, ttlMs: number): Promise<LeaseClient> {
    const store = await openZookeeper(parseStoreUrl(`${ensemble.url}/ensemble?timeoutMs=1000`));
    stores.push(store);
    const c = new LeaseClient({ store, owner, ttlMs, heartbeatMs: Math.floor(ttlMs / 6) });
    clients.push(c);
    return c;
  }

  it('loses its leader to SIGKILL under contention: no two owners overlap, tokens keep rising', async () => {
    const ttl = 4000;
    const tenures: Tenure[] = [];
    const hot = ['hot/0', 'hot/1', 'hot/2'];
    const long = ['long/0'];

    const holders: HeldLease[] = [];
    for (const [i, resource] of long.entries()) {
      holders.push(await (await client(`holder-${i}`, ttl)).acquire(resource));
    }
    const holdStart = performance.now();

    // An acquire fails while the ensemble elects a leader or the connection moves: tried again.
    const workers = contend(
      ['w0', 'w1', 'w2', 'w3'],
      (owner) => client(owner, ttl),
      [...hot, ...long],
      tenures,
    );

    await sleep(1500);
    const leader = await ensemble.leader();
    const killedAt = performance.now();
    await leader.kill();
    const newLeader = await ensemble.leader();
    expect(newLeader).not.toBe(leader);
    await waitFor(
      'five acquisitions after the kill',
      () => tenures.filter((t) => t.start > killedAt).length >= 5,
      20_000,
    );
    const { failures } = await workers.stop();

    const holdEnd = performance.now();
    for (const held of holders) {
      // The holder may have lost it (its renewals failed past its deadline while the ensemble
      // elected a leader); if so it stopped at its deadline, which is what the checker uses.
      tenures.push({
        resource: held.resource,
        owner: held.owner,
        token: held.token,
        start: holdStart,
        end: held.state === 'lost' ? Math.min(holdEnd, held.validUntil) : holdEnd,
      });
    }
    expect(violations(tenures)).toEqual([]);
    const after = tenures.filter((t) => t.start > killedAt);
    expect(after.length).toBeGreaterThanOrEqual(5);
    const stillHeld = holders.filter((h) => h.state !== 'lost').length;
    console.info(
      `zookeeper ensemble: ${tenures.length - holders.length} tenures (${after.length} after the leader was killed), ` +
        `${failures} failed calls, ${stillHeld}/${holders.length} long leases kept`,
    );
  }, 60_000);
});
