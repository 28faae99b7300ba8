import { noAnswer, withDeadline } from '../../core/deadline.js';
import {
  finding,
  findingIds,
  FindingLevel,
  type Diagnosis,
  type Finding,
} from '../../core/doctor.js';
import type { EtcdClient, EtcdMember } from './etcd-driver.js';

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
  if (count === 1) {
    return [
      finding(
        'etcd.single-member',
        FindingLevel.WARNING,
        observed,
        'no fault tolerance: this one member holds the only copy of every record and token, so ' +
          'losing its disk loses them all (tokens then start again at 1), and while it is down ' +
          'no lease can be granted or renewed; leases stay exclusive while it runs',
        'run a cluster of 3 (or 5) members: a majority then holds every acknowledged write, and ' +
          'the cluster outlives the loss of a minority',
      ),
    ];
  }
  if (count > 0 && count % 2 === 0) {
    const quorum = count / 2 + 1;
    const survives = count - quorum;
    return [
      finding(
        'etcd.even-members',
        FindingLevel.WARNING,
        observed,
        `a quorum is ${quorum} of ${count}: the cluster survives ` +
          `${survives === 0 ? 'no failed member' : plural(survives, 'failed member')}, no more ` +
          `than ${plural(count - 1, 'member')} would, with one more machine that can fail ` +
          `(${count === 2 ? 'either one failing stops' : 'a partition into two halves stops'} ` +
          'every grant and renewal); leases stay exclusive',
        `run an odd number of members: ${count === 2 ? '3' : `${count - 1} or ${count + 1}`}`,
      ),
    ];
  }
  return [];
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

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
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

function isPermissionDenied(error: unknown): boolean {
  const name = (error as { constructor?: { name?: unknown } } | null)?.constructor?.name;
  return name === 'EtcdPermissionDeniedError' || name === 'GRPCPermissionDeniedError';
}
