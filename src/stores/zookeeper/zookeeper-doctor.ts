import {
  finding,
  findingIds,
  FindingLevel,
  type Diagnosis,
  type Finding,
} from '../../core/doctor.js';
import { plural, quorumFindings } from '../../core/quorum-findings.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import { fourLetterWord, type WordAnswer } from './zookeeper-words.js';

findingIds(
  'zookeeper.single-server',
  'zookeeper.even-voters',
  'zookeeper.force-sync-off',
  'zookeeper.settings-unread',
  'zookeeper.server-unanswered',
);

/** The words each server of the connect string is asked, and the whitelist that allows them. */
const WORDS = ['srvr', 'conf', 'mntr'] as const;
const WHITELIST = '4lw.commands.whitelist=srvr,conf,mntr';

/** The znode holding the ensemble's membership (ZooKeeper 3.5 and later), readable by anyone. */
export const CONFIG_ZNODE = '/zookeeper/config';

/** What `diagnoseZookeeper` needs of the store. */
export interface ZookeeperProbe {
  /** `host:port` of each server of the connect string. */
  readonly hosts: readonly string[];
  /** The deadline of each read. */
  readonly timeoutMs: number;
  /** The text of `CONFIG_ZNODE` through the store's session; `null` when there is no such znode. */
  readonly readConfig: () => Promise<string | null>;
}

/** What one server of the connect string answered. */
interface ServerReport {
  readonly host: string;
  /** Why it told nothing (no answer, not serving); `undefined` when it answered. */
  readonly failure?: string;
  readonly answers: Partial<Record<(typeof WORDS)[number], WordAnswer>>;
}

/** One member of the ensemble's membership (`server.N=…`). */
interface Member {
  readonly id: string;
  readonly voter: boolean;
}

/**
 * Reads each server of the connect string with the four-letter words `srvr` (its mode), `conf`
 * (the membership) and `mntr` (its fsync count), each on a connection of its own within
 * `timeoutMs`; the membership from the `/zookeeper/config` znode instead when no server lets
 * `conf` through. Findings: a standalone server or an ensemble of one voter (no fault tolerance);
 * an even number of voters (no more fault tolerance than one fewer); a server that acknowledges
 * writes without an fsync (`forceSync=no`, which `conf` does not show: a server whose `mntr` counts
 * transaction-log flushes since it started but no fsync has it); settings that could not be read,
 * with the whitelist that lets them be; servers that did not answer. `STORE_UNAVAILABLE` when no
 * server of the connect string answers at all.
 */
export async function diagnoseZookeeper(probe: ZookeeperProbe): Promise<Diagnosis> {
  const servers = await Promise.all(probe.hosts.map((host) => readServer(host, probe.timeoutMs)));
  const answered = servers.filter((s) => s.failure === undefined);
  if (answered.length === 0) {
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `zookeeper diagnose failed: no server answered: ${servers.map((s) => `${s.host}: ${s.failure}`).join('; ')}`,
    );
  }
  const checked = [`${WORDS.join(', ')} (four-letter words) on ${probe.hosts.join(', ')}`];
  const findings: Finding[] = [];
  const unread: string[] = [];

  const silent = servers.filter((s) => s.failure !== undefined);
  if (silent.length > 0) findings.push(unanswered(silent));

  const membership = await readMembership(answered, probe, checked);
  if (membership === undefined) {
    unread.push(`the membership (conf not allowed, and no ${CONFIG_ZNODE} znode)`);
  } else {
    findings.push(...membershipFindings(membership));
    const voters = membership.kind === 'ensemble' ? countVoters(membership.members) : 1;
    if (voters > probe.hosts.length) {
      unread.push(
        `forceSync of the ${voters - probe.hosts.length} voting server(s) not in the connect string`,
      );
    }
  }

  checked.push(
    'forceSync, from mntr: zk_cnt_fsynctime against zk_cnt_sync_processor_batch_size (conf does not show it)',
  );
  const unsynced: string[] = [];
  const unknownSync = new Map<string, string[]>(); // why → servers
  // An observer acknowledges no write of a quorum: its fsync does not matter.
  for (const server of answered.filter((s) => modeOf(s) !== 'observer')) {
    const sync = readSync(server);
    if (sync.off) unsynced.push(sync.observed);
    else if (sync.unread)
      unknownSync.set(sync.unread, [...(unknownSync.get(sync.unread) ?? []), server.host]);
  }
  for (const [why, hosts] of unknownSync) unread.push(`forceSync on ${hosts.join(', ')}: ${why}`);
  if (unsynced.length > 0) findings.push(forceSyncOff(unsynced));
  if (unread.length > 0) findings.push(settingsUnread(unread));
  return { findings, checked };
}

/** The three words on `host`, together; a failure when none of them got an answer. */
async function readServer(host: string, timeoutMs: number): Promise<ServerReport> {
  const settled = await Promise.allSettled(WORDS.map((w) => fourLetterWord(host, w, timeoutMs)));
  const answers: ServerReport['answers'] = {};
  settled.forEach((s, i) => {
    if (s.status === 'fulfilled') answers[WORDS[i]!] = s.value;
  });
  const got = Object.values(answers);
  if (got.length === 0) {
    const reason = (settled[0] as PromiseRejectedResult).reason as Error;
    return { host, failure: reason.message, answers };
  }
  if (got.some((a) => a.kind === 'not-serving'))
    return { host, failure: 'running, but not currently serving requests', answers };
  return { host, answers };
}

type Membership =
  | { readonly kind: 'standalone'; readonly observed: string }
  | { readonly kind: 'ensemble'; readonly members: readonly Member[]; readonly observed: string };

/**
 * The membership: standalone when a server says so (`srvr`); else the `server.N` lines of the
 * first `conf` answered (none in standalone mode); else those of the config znode (empty in
 * standalone mode); `undefined` when none could be read.
 */
async function readMembership(
  servers: readonly ServerReport[],
  probe: ZookeeperProbe,
  checked: string[],
): Promise<Membership | undefined> {
  for (const server of servers) {
    if (modeOf(server) === 'standalone')
      return { kind: 'standalone', observed: `srvr on ${server.host}: Mode: standalone` };
  }
  for (const server of servers) {
    const conf = server.answers.conf;
    // Every conf answer starts with clientPort=; anything else (an empty answer) says nothing.
    if (conf?.kind !== 'text' || !/^clientPort=/m.test(conf.text)) continue;
    const members = parseMembers(conf.text);
    return members.length === 0
      ? { kind: 'standalone', observed: `conf on ${server.host}: no server.N lines (standalone)` }
      : { kind: 'ensemble', members, observed: `conf on ${server.host}: ${describe(members)}` };
  }
  checked.push(`${CONFIG_ZNODE} (the ensemble's membership)`);
  const text = await probe.readConfig();
  if (text === null) return undefined;
  const members = parseMembers(text);
  return members.length === 0
    ? { kind: 'standalone', observed: `${CONFIG_ZNODE} is empty (standalone)` }
    : { kind: 'ensemble', members, observed: `${CONFIG_ZNODE}: ${describe(members)}` };
}

/** `standalone`, `leader`, `follower` or `observer`, as `srvr` says; `undefined` when it did not. */
function modeOf(server: ServerReport): string | undefined {
  const srvr = server.answers.srvr;
  return srvr?.kind === 'text' ? /^Mode: (\w+)/m.exec(srvr.text)?.[1] : undefined;
}

function countVoters(members: readonly Member[]): number {
  return members.filter((m) => m.voter).length;
}

/** `server.N=host:quorum:election[:participant|:observer][;client]` lines; observers do not vote. */
function parseMembers(text: string): Member[] {
  const members: Member[] = [];
  for (const match of text.matchAll(/^server\.(\d+)=([^\n]*)$/gm)) {
    const spec = match[2]!.split(';')[0]!;
    members.push({ id: match[1]!, voter: !/:observer$/.test(spec.trim()) });
  }
  return members;
}

function describe(members: readonly Member[]): string {
  const voters = countVoters(members);
  const observers = members.length - voters;
  return (
    `${plural(voters, 'voting server')}` +
    (observers > 0 ? ` and ${plural(observers, 'observer')} (not voting)` : '')
  );
}

function membershipFindings(membership: Membership): Finding[] {
  const voters = membership.kind === 'standalone' ? 1 : countVoters(membership.members);
  return quorumFindings(voters, membership.observed, {
    ids: { single: 'zookeeper.single-server', even: 'zookeeper.even-voters' },
    voter: 'server',
    group: 'ensemble',
    oddOf: 'voting servers',
    evenNote: '(observers do not count)',
  });
}

/**
 * Whether `server` fsyncs its transaction log, from `mntr`: each flush of the log (one
 * `sync_processor_batch_size` sample) fsyncs it first when `forceSync` is on (one `fsynctime`
 * sample), so flushes without a single fsync mean it is off. Unread when `mntr` is not allowed,
 * lacks the counts (before ZooKeeper 3.6), or no write reached the log since the server started.
 */
function readSync(server: ServerReport): { off?: boolean; observed: string; unread?: string } {
  const mntr = server.answers.mntr;
  if (mntr === undefined) return { observed: '', unread: 'mntr got no answer' };
  if (mntr.kind !== 'text') return { observed: '', unread: 'mntr is not in the whitelist' };
  const count = (name: string): number | undefined => {
    const value = new RegExp(`^zk_cnt_${name}\\s+(\\d+)`, 'm').exec(mntr.text)?.[1];
    return value === undefined ? undefined : Number(value);
  };
  const flushes = count('sync_processor_batch_size');
  const fsyncs = count('fsynctime');
  if (flushes === undefined || fsyncs === undefined)
    return { observed: '', unread: 'mntr shows no fsync counts (ZooKeeper before 3.6?)' };
  if (flushes === 0)
    return { observed: '', unread: 'no write reached its log since it started, nothing to count' };
  if (fsyncs > 0) return { observed: '' };
  const observed =
    `${server.host}: ${plural(flushes, 'transaction log flush', 'es')} since it started, 0 fsyncs ` +
    `(mntr zk_cnt_sync_processor_batch_size ${flushes}, zk_cnt_fsynctime 0): forceSync=no`;
  return { off: true, observed };
}

function forceSyncOff(observed: readonly string[]): Finding {
  return finding(
    'zookeeper.force-sync-off',
    FindingLevel.UNSAFE,
    observed.join('; '),
    'these servers acknowledge writes before they are on disk: a power loss or an OS crash of ' +
      'their machines can lose acknowledged grants and token increments, so a second holder can ' +
      'be granted, or a token handed out again',
    'remove forceSync=no from zoo.cfg (and -Dzookeeper.forceSync=no from the JVM options) and ' +
      'restart each server: the default, yes, fsyncs the transaction log before acknowledging',
  );
}

function settingsUnread(what: readonly string[]): Finding {
  return finding(
    'zookeeper.settings-unread',
    FindingLevel.UNKNOWN,
    `not read: ${what.join('; ')}`,
    'with forceSync=no a power loss can lose acknowledged grants, and with a single server or ' +
      'an even count of them a failure costs more than it need',
    `add ${WHITELIST} to every server's zoo.cfg (forceSync is told from mntr, the membership from ` +
      'conf), or check by hand that forceSync is absent or yes and that 3 or 5 servers vote',
  );
}

function unanswered(servers: readonly ServerReport[]): Finding {
  return finding(
    'zookeeper.server-unanswered',
    FindingLevel.UNKNOWN,
    servers.map((s) => `${s.host}: ${s.failure}`).join('; '),
    'its settings were not read, and while it is down or cut off the ensemble tolerates fewer failures',
    'check that server (echo srvr | nc HOST PORT) and its place in the connect string',
  );
}
