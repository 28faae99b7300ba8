import { noop } from 'cockatiel';
import { Etcd3, type IMember } from 'etcd3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { diagnoseStore, openStore, type Diagnosis, type LeaseStore } from '../../src/index.js';
import { EtcdCluster, etcdUnavailable } from '../harness/etcd-server.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';
import { freePort } from '../harness/ports.js';
import { waitFor } from '../harness/processes.js';

/** The ids and levels of a diagnosis, for one assertion. */
const found = (d: Diagnosis): string[] => d.findings.map((f) => `${f.id} ${f.level}`);

// One three-member cluster for the whole file, changed step by step: clean at three, a fourth
// member added (not started) makes four, then members are removed down to one.
describeServer('etcd doctor', etcdUnavailable(), () => {
  let etcd: EtcdCluster;
  let raw: Etcd3;
  let store: LeaseStore;

  beforeAll(async () => {
    etcd = await EtcdCluster.start({ size: 3, strictReconfigCheck: false });
    // Everything through the first member, which stays to the end.
    const first = etcd.members[0]!.endpoint;
    // No retries or circuit breaking: the membership helpers below retry by themselves.
    raw = new Etcd3({ hosts: [first], faultHandling: { host: () => noop, global: noop } });
    store = await openStore(`etcd://${first}?prefix=/doctor/&timeoutMs=1000`);
  });
  afterAll(async () => {
    await store?.close();
    raw?.close();
    await etcd?.stop();
  });

  /** Waits until the store reports `expected` (a membership change reaches every member soon after). */
  const expectFound = async (expected: string[]): Promise<Diagnosis> => {
    let last: Diagnosis | undefined;
    await waitFor(`findings ${expected.join(', ') || 'none'}`, async () => {
      last = await diagnoseStore(store);
      return JSON.stringify(found(last)) === JSON.stringify(expected);
    }).catch((error: unknown) => {
      throw new Error(`${String(error)}; last: ${JSON.stringify(last)}`);
    });
    return last!;
  };

  const deadline = (): { deadline: number } => ({ deadline: Date.now() + 2000 });
  const members = async (): Promise<IMember[]> =>
    (await raw.cluster.memberList({}, deadline())).members;
  /**
   * A membership change, sent again until `done` shows it took effect: a change that removes the
   * leader, or lands during an election, can go unanswered.
   */
  const change = async (
    what: string,
    send: () => Promise<unknown>,
    done: (m: IMember[]) => boolean,
  ) =>
    waitFor(
      what,
      async () => {
        if (done(await members())) return true;
        await send().catch(() => {});
        return false;
      },
      20_000,
      100,
    );
  /** Adds a member that is never started (its peer URL a free loopback port); its id. */
  const addMember = async (isLearner: boolean): Promise<string> => {
    const peer = `http://127.0.0.1:${await freePort()}`;
    const listed = (m: IMember[]): IMember | undefined => m.find((x) => x.peerURLs.includes(peer));
    await change(
      `${peer} to be added`,
      () => raw.cluster.memberAdd({ peerURLs: [peer], isLearner }, deadline()),
      (m) => listed(m) !== undefined,
    );
    return listed(await members())!.ID;
  };
  const removeMember = (id: string): Promise<void> =>
    change(
      `member ${id} to be removed`,
      () => raw.cluster.memberRemove({ ID: id }, deadline()),
      (m) => !m.some((x) => x.ID === id),
    );
  const idOf = async (name: string): Promise<string> =>
    (await members()).find((m) => m.name === name)!.ID;

  it('three voting members (a learner aside) are clean; MemberList is what was read', async () => {
    const clean = await diagnoseStore(store);
    expect(clean.findings).toEqual([]);
    expect(clean.checked.join('\n')).toContain('MemberList');

    // A learner (added, not started) does not vote: still three.
    const learner = await addMember(true);
    try {
      expect(found(await diagnoseStore(store))).toEqual([]);
    } finally {
      await removeMember(learner);
    }
  });

  it('a fourth voting member (added, not started) is etcd.even-members, a warning', async () => {
    const fourth = await addMember(false);
    try {
      const { findings } = await expectFound(['etcd.even-members warning']);
      expect(findings[0]!.observed).toContain('4 voting members');
      expect(findings[0]!.observed).toContain('one not started');
      expect(findings[0]!.risk).toContain('quorum is 3 of 4');
      expect(findings[0]!.fix).toContain('3 or 5');
    } finally {
      await removeMember(fourth);
    }
    await expectFound([]);
  });

  it('two members are etcd.even-members; one member is etcd.single-member, both warnings', async () => {
    await removeMember(await idOf('m2'));
    const two = await expectFound(['etcd.even-members warning']);
    expect(two.findings[0]!.observed).toBe('2 voting members: m0, m1');
    expect(two.findings[0]!.risk).toContain('either one failing stops every grant');

    await removeMember(await idOf('m1'));
    const one = await expectFound(['etcd.single-member warning']);
    expect(one.findings[0]!.observed).toBe('1 voting member: m0');
    expect(one.findings[0]!.fix).toContain('3 (or 5) members');
  });

  it('a paused server gives STORE_UNAVAILABLE within the deadline, not a hang', async () => {
    etcd.members[0]!.pause();
    try {
      const error = await rejection(diagnoseStore(store), 10_000);
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.message).toMatch(/etcd diagnose failed.*no answer within the deadline/);
    } finally {
      etcd.members[0]!.resume();
    }
  });
});
