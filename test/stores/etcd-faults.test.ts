import { afterEach, expect, it } from 'vitest';
import { LeaseClient, openStore, type HeldLease, type LeaseStore } from '../../src/index.js';
import { EtcdCluster, etcdUnavailable, type EtcdMember } from '../harness/etcd-server.js';
import { waitFor } from '../harness/processes.js';
import { describeServer } from '../harness/describe-server.js';
import { contend, violations, type Tenure } from '../harness/tenures.js';
import { sleep } from '../harness/expect-error.js';

/** The member the others follow, from etcd's maintenance status (its JSON gateway). */
async function leaderOf(cluster: EtcdCluster): Promise<EtcdMember> {
  for (const member of cluster.members) {
    const response = await fetch(`http://${member.endpoint}/v3/maintenance/status`, {
      method: 'POST',
      body: '{}',
      signal: AbortSignal.timeout(1000),
    });
    const status = (await response.json()) as { header: { member_id: string }; leader: string };
    if (status.header.member_id === status.leader) return member;
  }
  throw new Error('no member says it leads');
}

describeServer('etcd store under faults', etcdUnavailable(), () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
  });

  async function cluster(size = 1): Promise<EtcdCluster> {
    const c = await EtcdCluster.start({ size });
    cleanup.push(() => c.stop());
    return c;
  }

  async function store(c: EtcdCluster, params = 'timeoutMs=600'): Promise<LeaseStore> {
    const opened = await openStore(`${c.url}?prefix=/faults/&${params}`);
    cleanup.push(() => opened.close());
    return opened;
  }

  function client(st: LeaseStore, owner: string, ttlMs: number): LeaseClient {
    const c = new LeaseClient({ store: st, owner, ttlMs, heartbeatMs: Math.floor(ttlMs / 6) });
    cleanup.push(() => c.close());
    return c;
  }

  it('a three-member cluster loses its leader to SIGKILL: held leases stay held, no two owners overlap, tokens keep rising', async () => {
    const etcd = await cluster(3);
    const ttl = 3000;
    const tenures: Tenure[] = [];
    const long = ['long/0', 'long/1'];
    const hot = ['hot/0', 'hot/1', 'hot/2'];

    const holders: HeldLease[] = [];
    for (const [i, resource] of long.entries()) {
      holders.push(await client(await store(etcd), `holder-${i}`, ttl).acquire(resource));
    }
    const holdStart = performance.now();

    const workers = contend(
      ['w0', 'w1', 'w2', 'w3'],
      async (owner) => client(await store(etcd), owner, ttl),
      [...hot, ...long],
      tenures,
    );

    await sleep(1500);
    const leader = await leaderOf(etcd);
    const killedAt = performance.now();
    await leader.kill();
    // Leases released by calls in flight at the kill may lapse instead; a busy machine slows the
    // election: wait for the others to make progress rather than for a fixed time.
    await sleep(2000);
    await waitFor(
      'five acquisitions after the kill',
      () => tenures.filter((t) => t.start > killedAt).length >= 5,
      15_000,
    );
    const { failures } = await workers.stop();

    const holdEnd = performance.now();
    for (const held of holders) {
      expect(held.state, `${held.resource} after the leader died`).not.toBe('lost');
      expect(held.signal.aborted).toBe(false);
      tenures.push({
        resource: held.resource,
        owner: held.owner,
        token: held.token,
        start: holdStart,
        end: holdEnd,
      });
    }
    expect(violations(tenures)).toEqual([]);
    const after = tenures.filter((t) => t.start > killedAt);
    expect(
      tenures.filter((t) => long.includes(t.resource) && !t.owner.startsWith('holder')),
    ).toEqual([]);
    console.info(
      `etcd faults: ${tenures.length - holders.length} tenures (${after.length} after the kill), ${failures} failed calls`,
    );
  }, 40_000);

  it('transitions grouped while the server is paused each fail within the deadline; what may have landed lapses, tokens keep rising', async () => {
    const etcd = await cluster();
    const st = await store(etcd, 'timeoutMs=300');
    const ttl = 1500;
    const held = (await st.tryAcquire('held', 'a', ttl))!;
    for (let i = 0; i < 6; i++) await st.release((await st.tryAcquire(`r/${i}`, 'a', ttl))!);

    etcd.members[0]!.pause();
    let settled: PromiseSettledResult<unknown>[];
    try {
      // One goes alone, the rest together: every one of them must fail on its own deadline.
      settled = await Promise.allSettled([
        ...Array.from({ length: 6 }, (_, i) => st.tryAcquire(`r/${i}`, 'a', ttl)),
        st.release(held),
      ]);
    } finally {
      etcd.members[0]!.resume();
    }
    for (const result of settled) {
      expect(result.status).toBe('rejected');
      const error = (result as PromiseRejectedResult).reason as {
        code: string;
        retryable: boolean;
      };
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.retryable).toBe(true);
    }
    // Whatever landed sits on an etcd lease nobody keeps alive any more: within the TTL and the
    // store's expiry lag every resource is free again, and its next token is above every earlier one.
    const deadline = performance.now() + ttl + 2000 + 3000;
    for (const resource of ['held', ...Array.from({ length: 6 }, (_, i) => `r/${i}`)]) {
      let lease = await st.tryAcquire(resource, 'b', ttl);
      while (!lease && performance.now() < deadline) {
        await sleep(100);
        lease = await st.tryAcquire(resource, 'b', ttl);
      }
      expect(lease, resource).not.toBeNull();
      // Before the pause: token 1 on every resource; a landed acquire of `r/*` took 2.
      expect(lease!.token, resource).toBeGreaterThanOrEqual(2);
      expect(await st.get(resource)).toMatchObject({ owner: 'b', token: lease!.token });
    }
  });

  it('restarts shorter than the validity window keep 1.5 s leases: the client reconnects at once', async () => {
    const etcd = await cluster();
    const member = etcd.members[0]!;
    const st = await store(etcd, 'timeoutMs=400');
    // Four holders, as workers in one process: their calls overlap, so they share one failed
    // connection to the endpoint, and its reconnect back-off holds up every renewal.
    const ttl = 1500;
    const owners = ['a', 'b', 'c', 'd'];
    const held = await Promise.all(
      owners.map(async (owner) => (await client(st, owner, ttl).tryAcquire(`job/${owner}`))!),
    );
    const lost: string[] = [];
    const renewedAt = held.map((h, i) => {
      const times: number[] = [];
      h.on('renewed', () => times.push(performance.now()));
      h.on('lost', (error) => lost.push(`${owners[i]}: ${error.message}`));
      return times;
    });
    const everyoneRenewedSince = (t: number): boolean =>
      renewedAt.every((times) => times.some((at) => at > t));

    const outages: string[] = [];
    for (let restart = 0; restart < 3; restart++) {
      await waitFor('a renewal of every lease', () =>
        everyoneRenewedSince(performance.now() - 300),
      );
      const down = performance.now();
      await member.kill(); // SIGKILL, down for 300 ms, then started again
      await sleep(Math.max(0, 300 - (performance.now() - down)));
      await member.launch(); // same port and data folder; returns once etcd reports itself healthy
      const up = performance.now();
      // Up to 3 s for every lease to renew; the expectations below say what happened.
      const renewedAll = (): boolean => everyoneRenewedSince(up);
      await waitFor('every lease renewed after the restart', renewedAll, 3000).catch(() => {});
      const renewed = renewedAt.map((times) => times.find((at) => at > up));
      outages.push(
        `down ${Math.round(up - down)} ms, renewed ${renewed.map((at) => (at === undefined ? 'never' : `${Math.round(at - down)}`)).join('/')} ms after the kill`,
      );
      expect(lost, outages.join('; ')).toEqual([]);
      expect(
        renewed.every((at) => at !== undefined),
        outages.join('; '),
      ).toBe(true);
    }
    for (const h of held) {
      expect(h.state).not.toBe('lost');
      expect(h.signal.aborted).toBe(false);
    }
    expect((await st.list({ prefix: 'job/' })).map((r) => [r.owner, r.token])).toEqual(
      owners.map((owner) => [owner, 1]),
    );
    console.info(`etcd restarts: ${outages.join('; ')}`);
  }, 30_000);
});
