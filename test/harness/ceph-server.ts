import { execFile, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.js';
import { ServerProcess } from './server-process.js';
import { startProcess, waitFor } from './processes.js';

const run = promisify(execFile);

// The SDK warns once per process that its releases after 2026 need Node 22; tests pin the version.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const BINARIES = ['ceph-mon', 'ceph-osd', 'radosgw', 'radosgw-admin', 'monmaptool', 'ceph'];

/** Whether the Ceph binaries this harness runs are installed; the reason when they are not. */
export function cephUnavailable(): string | null {
  for (const binary of BINARIES) {
    try {
      execFileSync('sh', ['-c', `command -v ${binary}`], { stdio: 'ignore' });
    } catch {
      return `${binary} not found on PATH (Debian packages radosgw ceph-mon ceph-osd)`;
    }
  }
  return null;
}

/** The S3 user every private Ceph gets. */
export const CEPH_S3_USER = Object.freeze({
  accessKeyId: 'leasehold-test',
  secretAccessKey: 'leasehold-test-secret',
});

/**
 * The cluster's configuration: authentication off, one monitor, one memstore OSD holding at most
 * 128 MiB, pools of one placement group and one replica, and a radosgw with few threads.
 */
function cephConf(dir: string, monPort: number, rgwPort: number): string {
  return `[global]
fsid = ${randomUUID()}
mon host = v2:127.0.0.1:${monPort}
public addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
ms client mode = crc
ms bind ipv6 = false
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 1
osd pool default pgp num = 1
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
paxos propose interval = 0.02
paxos min wait = 0.01
mon warn on pool no redundancy = false
osd objectstore = memstore
memstore device bytes = 134217728
osd op num shards = 1
osd op num threads per shard = 2
run dir = ${dir}/run
admin socket = ${dir}/run/$name.asok
log file = ${dir}/log/$name.log
pid file = ${dir}/run/$name.pid
crash dir = ${dir}/crash
keyring = ${dir}/keyring
mon data = ${dir}/mon
osd data = ${dir}/osd0
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:${rgwPort} tcp_nodelay=1
rgw data = ${dir}/rgw
rgw thread pool size = 32
rgw enable usage log = false
rgw dynamic resharding = false
`;
}

/** A Ceph daemon run in the foreground (`-f`), so the harness owns its process. */
class CephDaemon extends ServerProcess {
  constructor(
    readonly name: string,
    private readonly command: string,
    private readonly args: readonly string[],
    private readonly ready: () => Promise<boolean>,
    private readonly pidFile: string,
  ) {
    super();
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  async launch(): Promise<void> {
    const child = startProcess(this.command, [...this.args]);
    this.child = child;
    if (child.pid !== undefined) appendFileSync(this.pidFile, `${child.pid}\n`);
    await waitFor(
      `${this.name} to be ready`,
      async () => {
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(`${this.name} exited (${child.exitCode ?? child.signalCode})`);
        return this.ready();
      },
      30_000,
      100,
    );
  }
}

/** Every Ceph process this test process started, killed if the process exits without `stop`. */
const live = new Set<CephServer>();
process.once('exit', () => {
  for (const server of live) server.killNow();
});

/**
 * A detached shell that SIGKILLs the daemons listed in `pidFile` once this test process is gone
 * (a test runner may end its workers with a signal, which skips `exit` handlers), and exits by
 * itself when the cluster's folder is removed by a normal `stop`.
 */
function startWatchdog(dir: string, pidFile: string): void {
  const script =
    `while kill -0 ${process.pid} 2>/dev/null && [ -d '${dir}' ]; do sleep 1; done; ` +
    `[ -d '${dir}' ] && for p in $(cat '${pidFile}' 2>/dev/null); do ` +
    // Only a process still running this cluster's configuration: pids get reused.
    `grep -qs '${dir}' /proc/$p/cmdline && kill -9 "$p" 2>/dev/null; done; ` +
    `rm -rf '${dir}'`;
  spawn('sh', ['-c', script], { detached: true, stdio: 'ignore' }).unref();
}

/**
 * A private Ceph on free loopback ports in a temp folder: one monitor, one memstore OSD, one
 * radosgw (the S3 endpoint) and an S3 user, ready in one or two seconds (the monitor's
 * proposal interval is cut from 1 s to 20 ms: radosgw creates its pools one by one at start). `kill`, `pause`, `resume`
 * and `restart` act on radosgw, the process clients talk to; the objects live in the OSD and
 * survive a radosgw restart. The OSD keeps its objects in memory (memstore): a restart of the OSD
 * loses them, so the harness offers none.
 */
export class CephServer extends ServerProcess {
  private constructor(
    readonly dir: string,
    readonly monPort: number,
    readonly rgwPort: number,
    private readonly mon: CephDaemon,
    private readonly osd: CephDaemon,
    private readonly rgw: CephDaemon,
  ) {
    super();
  }

  /** Starts a fresh cluster; a failed bootstrap is retried on fresh ports and a fresh folder. */
  static async start(attempts = 3): Promise<CephServer> {
    let lastError: unknown;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const server = await CephServer.create();
      live.add(server);
      try {
        await server.bootstrap();
        return server;
      } catch (error) {
        lastError = error;
        await server.stop();
      }
    }
    throw lastError;
  }

  private static async create(): Promise<CephServer> {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-ceph-'));
    for (const sub of ['mon', 'osd0', 'run', 'log', 'rgw', 'crash']) mkdirSync(join(dir, sub));
    const monPort = await freePort();
    let rgwPort = await freePort();
    while (rgwPort === monPort) rgwPort = await freePort();
    const conf = join(dir, 'ceph.conf');
    writeFileSync(conf, cephConf(dir, monPort, rgwPort));
    const c = ['-c', conf];
    const pids = join(dir, 'daemons.pids');
    startWatchdog(dir, pids);
    const mon = new CephDaemon(
      'ceph-mon',
      'ceph-mon',
      [...c, '-i', 'a', '-f'],
      async () => {
        await run('ceph', [...c, '--connect-timeout', '2', 'mon', 'stat'], { timeout: 5000 });
        return true;
      },
      pids,
    );
    const osd = new CephDaemon(
      'ceph-osd',
      'ceph-osd',
      [...c, '-i', '0', '-f'],
      async () => {
        const { stdout } = await run('ceph', [...c, '--connect-timeout', '2', 'osd', 'stat'], {
          timeout: 5000,
        });
        return /1 up/.test(stdout);
      },
      pids,
    );
    const rgw = new CephDaemon(
      'radosgw',
      'radosgw',
      [...c, '-n', 'client.rgw', '-f'],
      async () => {
        const response = await fetch(`http://127.0.0.1:${rgwPort}/`, {
          signal: AbortSignal.timeout(1000),
        });
        await response.arrayBuffer();
        return response.status < 500;
      },
      pids,
    );
    return new CephServer(dir, monPort, rgwPort, mon, osd, rgw);
  }

  private async bootstrap(): Promise<void> {
    const conf = join(this.dir, 'ceph.conf');
    const c = ['-c', conf];
    const monmap = join(this.dir, 'monmap');
    const { stdout: confFsid } = await run('ceph-conf', [...c, '--lookup', 'fsid']);
    await run('ceph-authtool', [
      ...['--create-keyring', join(this.dir, 'keyring')],
      ...['--gen-key', '-n', 'mon.', '--cap', 'mon', 'allow *'],
    ]);
    await run('monmaptool', [
      ...['--create', '--add', 'a', `v2:127.0.0.1:${this.monPort}`],
      ...['--fsid', confFsid.trim(), monmap],
    ]);
    await run('ceph-mon', [...c, '--mkfs', '-i', 'a', '--monmap', monmap]);
    await this.mon.launch();
    const uuid = randomUUID();
    await run('ceph', [...c, '--connect-timeout', '5', 'osd', 'new', uuid], { timeout: 10_000 });
    await run('ceph-osd', [...c, '-i', '0', '--mkfs', '--osd-uuid', uuid], { timeout: 20_000 });
    await this.osd.launch();
    await this.rgw.launch();
    await run(
      'radosgw-admin',
      [
        ...c,
        ...['user', 'create', '--uid', 'leasehold', '--display-name', 'leasehold'],
        ...['--access-key', CEPH_S3_USER.accessKeyId, '--secret', CEPH_S3_USER.secretAccessKey],
      ],
      { timeout: 20_000 },
    );
  }

  /** `http://127.0.0.1:PORT` of radosgw. */
  get endpoint(): string {
    return `http://127.0.0.1:${this.rgwPort}`;
  }

  /** `s3://BUCKET/PREFIX?…` for this endpoint, with the test user's keys in the user info. */
  url(bucket: string, prefix = '', params: Record<string, string | number | boolean> = {}): string {
    const query = new URLSearchParams({
      region: 'us-east-1',
      endpoint: this.endpoint,
      forcePathStyle: 'true',
      ...Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)])),
    });
    const user = `${CEPH_S3_USER.accessKeyId}:${CEPH_S3_USER.secretAccessKey}`;
    return `s3://${user}@${bucket}/${prefix}?${query}`;
  }

  override get pid(): number | undefined {
    return this.rgw.pid;
  }

  /** SIGKILL of radosgw: clients get refused connections; the objects stay in the OSD. */
  override async kill(): Promise<void> {
    await this.rgw.kill();
  }

  /** SIGSTOP of radosgw: its port stays open, nothing answers. */
  override pause(): void {
    this.rgw.pause();
  }

  override resume(): void {
    this.rgw.resume();
  }

  /** Starts radosgw again (after `kill`), on the same port. */
  async launch(): Promise<void> {
    await this.rgw.launch();
  }

  /** Stops every daemon and removes the folder. */
  async stop(): Promise<void> {
    for (const daemon of [this.rgw, this.osd, this.mon]) {
      daemon.resume();
      await daemon.kill();
    }
    live.delete(this);
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** @internal SIGKILL of every daemon, synchronously (on process exit). */
  killNow(): void {
    for (const daemon of [this.rgw, this.osd, this.mon]) {
      const pid = daemon.pid;
      if (pid === undefined) continue;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}
