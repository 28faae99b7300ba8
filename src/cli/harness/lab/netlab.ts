import { execFileSync } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';

/** Names of the namespaces a lab makes: `lhlab<pid of the lab's process>-<host>`. */
const PREFIX = 'lhlab';
const BRIDGE = 'lhbr';
const SUBNET = '10.77.0';
/** The most hosts one lab holds (its /24, less the bridge's own address and the broadcast). */
const MAX_HOSTS = 250;

/** One host of a lab: a network namespace of its own, on the lab's bridge. */
export interface LabHost {
  /** For messages: `etcd-1`, `w03`. */
  readonly name: string;
  /** The namespace (`ip netns exec <ns>`). */
  readonly ns: string;
  /** Its address on the lab's network. */
  readonly ip: string;
}

/** Why a lab cannot be made here, or `null` when it can. */
export function netlabUnavailable(): string | null {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (process.getuid?.() !== 0) return 'network namespaces need root (ip netns add)';
  try {
    execFileSync('ip', ['-V'], { stdio: 'ignore' });
  } catch {
    return 'ip not found (Debian package iproute2)';
  }
  try {
    execFileSync('unshare', ['--net', 'true'], { stdio: 'ignore' });
  } catch {
    return 'unshare --net failed: new network namespaces are refused here';
  }
  return null;
}

/** Set by `labCommand` to the network namespace of the process that started the lab's process. */
const OUTER_NET = 'LEASEHOLD_LAB_OUTER_NET';

function currentNet(): string {
  return readlinkSync('/proc/self/ns/net');
}

/**
 * Whether this process runs in a network namespace of its own, made for it by `labCommand`: not
 * the one of the process that started it.
 */
export function inPrivateNetwork(): boolean {
  const outer = process.env[OUTER_NET];
  try {
    return outer !== undefined && outer !== currentNet();
  } catch {
    return false;
  }
}

/**
 * The command and environment that run `argv` in a network namespace of its own, where it may
 * open a `NetLab`.
 */
export function labCommand(argv: readonly string[]): {
  file: string;
  args: string[];
  env: NodeJS.ProcessEnv;
} {
  return {
    file: 'unshare',
    args: ['--net', '--', ...argv],
    env: { ...process.env, [OUTER_NET]: currentNet() },
  };
}

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the namespaces of labs whose process is gone (SIGKILLed before it could clean up),
 * killing whatever still runs in them. Returns how many it removed.
 */
export function sweepStaleLabs(): number {
  let names: string[];
  try {
    names = readdirSync('/run/netns');
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    const owner = new RegExp(`^${PREFIX}(\\d+)-`).exec(name);
    if (!owner || alive(Number(owner[1]))) continue;
    try {
      const pids = execFileSync('ip', ['netns', 'pids', name], { encoding: 'utf8' });
      for (const pid of pids.split(/\s+/).filter(Boolean)) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
      ip('netns', 'del', name);
      removed++;
    } catch {
      // another sweep got there first
    }
  }
  return removed;
}

/**
 * A network of hosts on one machine, for runs that cut links the way a real network fails: each
 * host is a network namespace of its own with one address on a bridge that lives in this
 * process's namespace, which must itself be private (`unshare --net`), so no address of the
 * machine's own network is ever used. A partition is a pair of blackhole rules, each dropping on
 * arrival what comes from the other host: packets between the two vanish without an error, and
 * connections between them stall as they would across a cut cable.
 * The lab's namespaces go with `close()`; those of a lab whose process was killed are swept by
 * the next lab.
 */
export class NetLab {
  private readonly hosts = new Map<string, LabHost>();
  private readonly cuts = new Set<string>();
  private next = 2;

  private constructor() {}

  /** Opens a lab in this process's private network namespace. */
  static open(): NetLab {
    if (!inPrivateNetwork())
      throw new Error(
        'a lab must run in a network namespace of its own (start its process with labCommand)',
      );
    sweepStaleLabs();
    ip('link', 'set', 'lo', 'up');
    ip('link', 'add', BRIDGE, 'type', 'bridge');
    ip('addr', 'add', `${SUBNET}.1/24`, 'dev', BRIDGE);
    ip('link', 'set', BRIDGE, 'up');
    return new NetLab();
  }

  /** This process's own address on the lab's network. */
  get controllerIp(): string {
    return `${SUBNET}.1`;
  }

  /** Adds a host named `name` (letters, digits and dashes, at most 20). */
  addHost(name: string): LabHost {
    if (!/^[a-z0-9-]{1,20}$/i.test(name)) throw new Error(`bad lab host name ${name}`);
    if (this.hosts.has(name)) throw new Error(`lab host ${name} exists`);
    if (this.next > MAX_HOSTS) throw new Error(`a lab holds at most ${MAX_HOSTS - 1} hosts`);
    const n = this.next++;
    const host: LabHost = { name, ns: `${PREFIX}${process.pid}-${name}`, ip: `${SUBNET}.${n}` };
    ip('netns', 'add', host.ns);
    this.hosts.set(name, host);
    ip('link', 'add', `lhv${n}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', host.ns);
    ip('link', 'set', `lhv${n}`, 'master', BRIDGE, 'up');
    ip('-n', host.ns, 'link', 'set', 'lo', 'up');
    ip('-n', host.ns, 'addr', 'add', `${host.ip}/24`, 'dev', 'eth0');
    ip('-n', host.ns, 'link', 'set', 'eth0', 'up');
    // The local table moves behind the cut rules (pref 10), or packets to this host's own address
    // would be delivered before a cut could drop them.
    ip('-n', host.ns, 'rule', 'add', 'pref', '100', 'lookup', 'local');
    ip('-n', host.ns, 'rule', 'del', 'pref', '0');
    return host;
  }

  /** Removes a host whose processes have ended; its links go with it. */
  removeHost(name: string): void {
    const host = this.hosts.get(name);
    if (!host) return;
    this.hosts.delete(name);
    for (const cut of [...this.cuts]) if (cut.split('|').includes(name)) this.cuts.delete(cut);
    try {
      ip('netns', 'del', host.ns);
    } catch {
      // already gone
    }
  }

  host(name: string): LabHost {
    const host = this.hosts.get(name);
    if (!host) throw new Error(`no lab host ${name}`);
    return host;
  }

  /** The command prefix that runs a program on `host` (it then replaces the prefix, same pid). */
  wrap(host: LabHost): string[] {
    return ['ip', 'netns', 'exec', host.ns];
  }

  /** Cuts every link between `a` and each of `others`, both ways. */
  cut(a: LabHost, others: readonly LabHost[]): void {
    for (const b of others) {
      const key = [a.name, b.name].sort().join('|');
      if (a === b || this.cuts.has(key)) continue;
      // Dropped on arrival, silently: a sender sees no error, its packets just never arrive.
      ip('-n', a.ns, 'rule', 'add', 'pref', '10', 'from', b.ip, 'iif', 'eth0', 'blackhole');
      ip('-n', b.ns, 'rule', 'add', 'pref', '10', 'from', a.ip, 'iif', 'eth0', 'blackhole');
      this.cuts.add(key);
    }
  }

  /** Whether the link between two hosts is cut. */
  isCut(a: LabHost, b: LabHost): boolean {
    return this.cuts.has([a.name, b.name].sort().join('|'));
  }

  /** Restores every cut link. */
  heal(): void {
    for (const key of this.cuts) {
      const [a, b] = key.split('|').map((name) => this.hosts.get(name));
      if (!a || !b) continue;
      for (const [from, to] of [
        [a, b],
        [b, a],
      ] as const) {
        try {
          ip('-n', from.ns, 'rule', 'del', 'pref', '10', 'from', to.ip, 'iif', 'eth0', 'blackhole');
        } catch {
          // the host went meanwhile
        }
      }
    }
    this.cuts.clear();
  }

  /**
   * Moves a service address (`serviceIp`) to `to` from wherever it was, as a failover moves a
   * virtual IP: clients that dial it reach `to` from now on, and connections made to the old
   * holder of the address break.
   */
  moveServiceAddress(to: LabHost): void {
    for (const host of this.hosts.values()) {
      try {
        ip('-n', host.ns, 'addr', 'del', `${this.serviceIp}/24`, 'dev', 'eth0');
      } catch {
        // not there
      }
    }
    ip('-n', to.ns, 'addr', 'add', `${this.serviceIp}/24`, 'dev', 'eth0');
    // No gratuitous ARP here: every host forgets whom the address belonged to.
    for (const host of this.hosts.values()) ip('-n', host.ns, 'neigh', 'flush', 'all');
    ip('neigh', 'flush', 'all');
  }

  /** The address a primary/replica store's clients dial, moved by a failover. */
  get serviceIp(): string {
    return `${SUBNET}.${MAX_HOSTS + 2}`;
  }

  /** Removes every host of the lab and its bridge. */
  close(): void {
    for (const name of [...this.hosts.keys()]) this.removeHost(name);
    try {
      ip('link', 'del', BRIDGE);
    } catch {
      // gone with the namespace
    }
  }
}
