import { noAnswer, withDeadline } from '../../core/deadline.js';
import {
  finding,
  findingIds,
  FindingLevel,
  type Diagnosis,
  type Finding,
} from '../../core/doctor.js';
import { plural, quorumFindings } from '../../core/quorum-findings.js';
import type { EtcdClient, EtcdMember } from './etcd-driver.js';
import { isPermissionDenied } from './etcd-errors.js';

findingIds('etcd.single-member', 'etcd.even-members', 'etcd.members-unread');

/** What `diagnose` read, in etcd's words. */
const CHECKED = 'MemberList (the voting members and learners of the cluster)';

/** How to look by hand when the membership could not be read. */
const LOOK = 'etcdctl member list (3 or 5 voting members; learners do not count)';

/**
 * The cluster's membership, as one `MemberList` within `timeoutMs` reports it: a quorum is a
 * majority of the voting members (learners do not vote; a member added but not started does),
 * so one voting member leaves a single copy of every record, and an even count tolerates no
 * more failures than one member fewer. etcd writes every acknowledged change to its WAL with an
 * fsync on a majority first, so the count is what decides what a failure can cost. A refused
 * `MemberList` (permissions) is reported as unread; no answer in time rejects.
 */
export async function diagnoseEtcd(client: EtcdClient, timeoutMs: number): Promise<Diagnosis> {
  const checked = [CHECKED];
  const cluster = client.cluster;
  if (!cluster) {
    return { findings: [unread('this etcd client has no cluster service')], checked };
  }
  let members: EtcdMember[];
  try {
    const ms = timeoutMs + 250; // the gRPC deadline normally fires first, with its own error
    const call = cluster.memberList({}, { deadline: Date.now() + timeoutMs });
    members = (await withDeadline(call, ms, () => noAnswer('etcd member list', ms))).members;
  } catch (error) {
    if (!isPermissionDenied(error)) throw error;
    return { findings: [unread(`MemberList refused: ${(error as Error).message}`)], checked };
  }
  return { findings: membershipFindings(members), checked };
}

/** The findings of a membership: one voting member, or an even count of them. */
function membershipFindings(members: readonly EtcdMember[]): Finding[] {
  const voters = members.filter((m) => m.isLearner !== true);
  const count = voters.length;
  const observed = describe(members);
  return quorumFindings(count, observed, {
    ids: { single: 'etcd.single-member', even: 'etcd.even-members' },
    voter: 'member',
    group: 'cluster',
    oddOf: 'members',
  });
}

/** `3 voting members: a, b, c` plus those not started and the learners. */
function describe(members: readonly EtcdMember[]): string {
  const voters = members.filter((m) => m.isLearner !== true);
  const learners = members.length - voters.length;
  const names = voters
    .map((m) => (m.name === '' ? `one not started (${m.peerURLs.join(', ')})` : m.name))
    .sort(
      (a, b) => Number(a.startsWith('one ')) - Number(b.startsWith('one ')) || (a < b ? -1 : 1),
    );
  const learnerNote = learners === 0 ? '' : `, and ${plural(learners, 'learner')} (not voting)`;
  return `${plural(voters.length, 'voting member')}: ${names.join(', ')}${learnerNote}`;
}

function unread(observed: string): Finding {
  return finding(
    'etcd.members-unread',
    FindingLevel.UNKNOWN,
    observed,
    'the member count was not read: with one member, or an even count, a failure costs more than it need',
    `check by hand with ${LOOK}; or let this etcd user run MemberList`,
  );
}
