import { afterAll, beforeAll, expect, it } from 'vitest';
import { LeaseClient, type HeldLease, type LeaseStore } from '../../src/index.js';
import { parseStoreUrl } from '../../src/core/store-url.js';
import { openZookeeper } from '../../src/stores/zookeeper/open.js';
import { describeServer } from '../harness/describe-server.js';
import { violations, type Tenure } from '../harness/tenures.js';
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

    let running = true;
    let failures = 0;
    const worker = async (owner: string): Promise<void> => {
      const c = await client(owner, ttl);
      const targets = [...hot, ...long];
      while (running) {
        const resource = targets[Math.floor(Math.random() * targets.length)]!;
        let held: HeldLease | null;
        try {
          held = await c.tryAcquire(resource);
        } catch {
          failures++; // the ensemble was electing a leader or the connection moved: try again
          await sleep(50);
          continue;
        }
        if (!held) {
          await sleep(10);
          continue;
        }
        const start = performance.now();
        await sleep(30 + Math.random() * 150);
        const end = Math.min(performance.now(), held.validUntil);
        tenures.push({ resource, owner, token: held.token, start, end });
        await held.release().catch(() => {}); // a failed release lapses at its TTL
      }
    };
    const workers = ['w0', 'w1', 'w2', 'w3'].map(worker);

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
    running = false;
    await Promise.all(workers);

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
