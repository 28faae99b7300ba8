import { execFile, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cephConf } from './ceph-conf.js';
import { freePort, serverFolder } from './process-tree.js';
import { PrivateServer, type ServerCommand } from './private-server.js';
import { startOnFreePort } from './start-on-free-port.js';

const run = promisify(execFile);

const BINARIES = ['ceph-mon', 'ceph-osd', 'radosgw', 'radosgw-admin', 'monmaptool', 'ceph'];

/** Why the Ceph programs a private Ceph runs cannot run here, or `null` when they can. */
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

/** The keys of the S3 user a private Ceph creates. */
export interface CephS3User {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** A Ceph daemon run in the foreground (`-f`), so its owner holds its process. */
class CephDaemon extends PrivateServer {
  protected override readonly readyPollMs = 100;

  constructor(
    readonly program: string,
    dir: string,
    private readonly args: readonly string[],
    private readonly ready: () => Promise<boolean>,
    private readonly pidFile: string,
    readonly port: number,
  ) {
    super(dir, { ownsDir: false, watchdog: false, detached: false });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  override async launch(timeoutMs = 30_000): Promise<void> {
    await super.launch(timeoutMs);
  }

  override spawnServer(): void {
    super.spawnServer();
    if (this.pid !== undefined) appendFileSync(this.pidFile, `${this.pid}\n`);
  }

  protected command(): ServerCommand {
    return { file: this.program, args: [...this.args] };
  }

  protected isReady(): Promise<boolean> {
    return this.ready();
  }
}

/** Every Ceph this process started, killed if the process exits without `stop`. */
const live = new Set<PrivateCeph>();
let exitHandler = false;

/**
 * A detached shell that SIGKILLs the daemons listed in `pidFile` once this process is gone (a
 * test runner may end its workers with a signal, which skips `exit` handlers), and exits by
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
 * radosgw (the S3 endpoint, the only S3 server found that honours `If-None-Match` and `If-Match`
 * on PUT) and an S3 user, ready in one or two seconds. `kill`, `pause`, `resume` and `launch` act
 * on radosgw, the process clients talk to; the objects live in the OSD and survive a radosgw
 * restart. The OSD keeps its objects in memory (memstore): a restart of the OSD would lose them,
 * so none is offered.
 */
export class PrivateCeph {
  private constructor(
    readonly dir: string,
    readonly monPort: number,
    readonly rgwPort: number,
    private readonly user: CephS3User,
    private readonly mon: CephDaemon,
    private readonly osd: CephDaemon,
    private readonly rgw: CephDaemon,
  ) {}

  /** Starts a fresh cluster; a failed bootstrap is retried on fresh ports and a fresh folder. */
  static async start(user: CephS3User, attempts = 3): Promise<PrivateCeph> {
    if (!exitHandler) {
      exitHandler = true;
      process.once('exit', () => {
        for (const ceph of live) ceph.killNow();
      });
    }
    return startOnFreePort(
      async (monPort) => {
        const ceph = await PrivateCeph.create(user, monPort);
        live.add(ceph);
        return ceph;
      },
      { start: (ceph) => ceph.bootstrap(), discard: (ceph) => ceph.stop(), attempts },
    );
  }

  private static async create(user: CephS3User, monPort: number): Promise<PrivateCeph> {
    const dir = serverFolder('leasehold-ceph-');
    for (const sub of ['mon', 'osd0', 'run', 'log', 'rgw', 'crash']) mkdirSync(join(dir, sub));
    let rgwPort = await freePort();
    while (rgwPort === monPort) rgwPort = await freePort();
    const conf = join(dir, 'ceph.conf');
    writeFileSync(conf, cephConf(dir, monPort, rgwPort));
    const c = ['-c', conf];
    const pids = join(dir, 'daemons.pids');
    startWatchdog(dir, pids);
    const ceph = (...args: string[]) =>
      run('ceph', [...c, '--connect-timeout', '2', ...args], { timeout: 5000 });
    const mon = new CephDaemon(
      'ceph-mon',
      dir,
      [...c, '-i', 'a', '-f'],
      async () => Boolean(await ceph('mon', 'stat')),
      pids,
      monPort,
    );
    const osd = new CephDaemon(
      'ceph-osd',
      dir,
      [...c, '-i', '0', '-f'],
      async () => /1 up/.test((await ceph('osd', 'stat')).stdout),
      pids,
      monPort,
    );
    const rgw = new CephDaemon(
      'radosgw',
      dir,
      [...c, '-n', 'client.rgw', '-f'],
      async () => {
        const response = await fetch(`http://127.0.0.1:${rgwPort}/`, {
          signal: AbortSignal.timeout(1000),
        });
        await response.arrayBuffer();
        return response.status < 500;
      },
      pids,
      rgwPort,
    );
    return new PrivateCeph(dir, monPort, rgwPort, user, mon, osd, rgw);
  }

  private async bootstrap(): Promise<void> {
    const c = ['-c', join(this.dir, 'ceph.conf')];
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
        ...['--access-key', this.user.accessKeyId, '--secret', this.user.secretAccessKey],
      ],
      { timeout: 20_000 },
    );
  }

  /** `http://127.0.0.1:PORT` of radosgw. */
  get endpoint(): string {
    return `http://127.0.0.1:${this.rgwPort}`;
  }

  /** `s3://BUCKET/PREFIX?…` for this endpoint, with the S3 user's keys in the user info. */
  url(bucket: string, prefix = '', params: Record<string, string | number | boolean> = {}): string {
    const query = new URLSearchParams({
      region: 'us-east-1',
      endpoint: this.endpoint,
      forcePathStyle: 'true',
      ...Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)])),
    });
    const user = `${this.user.accessKeyId}:${this.user.secretAccessKey}`;
    return `s3://${user}@${bucket}/${prefix}?${query}`;
  }

  /** The pid of radosgw. */
  get pid(): number | undefined {
    return this.rgw.pid;
  }

  /** The pids of radosgw, the OSD and the monitor: where a request's CPU time is spent. */
  get pids(): (number | undefined)[] {
    return [this.rgw.pid, this.osd.pid, this.mon.pid];
  }

  /** SIGKILL of radosgw: clients get refused connections; the objects stay in the OSD. */
  async kill(): Promise<void> {
    await this.rgw.kill();
  }

  /** SIGSTOP of radosgw: its port stays open, nothing answers. */
  pause(): void {
    this.rgw.pause();
  }

  resume(): void {
    this.rgw.resume();
  }

  /** Starts radosgw again (after `kill`), on the same port. */
  async launch(): Promise<void> {
    await this.rgw.launch();
  }

  /** Kills radosgw and starts it again on the same port. */
  async restart(): Promise<void> {
    await this.kill();
    await this.launch();
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

  /** SIGKILL of every daemon and removal of the folder, synchronously (on process exit). */
  killNow(): void {
    for (const daemon of [this.rgw, this.osd, this.mon]) daemon.killNow();
    live.delete(this);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
