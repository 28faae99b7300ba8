import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliFailure } from '../../output.js';
import { onPath } from './process-tree.js';
import { PrivateServer, type ServerCommand } from './private-server.js';

/**
 * verify's private one-member etcd. Its folder is on /dev/shm when there is one (etcd fsyncs every
 * write); a 10 ms heartbeat keeps its smallest lease TTL near 1.4 s.
 */
export class PrivateEtcd extends PrivateServer {
  readonly program = 'etcd';

  private constructor(
    private readonly binary: string,
    readonly port: number,
    private readonly peerPort: number,
  ) {
    super(
      mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'leasehold-verify-etcd-')),
    );
  }

  /** Throws a `CliFailure` (exit 2) naming the Debian package when etcd is not installed. */
  static create(port: number, peerPort: number): PrivateEtcd {
    const binary = onPath('etcd');
    if (!binary)
      throw new CliFailure(
        '--store etcd: etcd is not installed (on Debian: apt-get install etcd-server)',
        2,
      );
    return new PrivateEtcd(binary, port, peerPort);
  }

  get url(): string {
    return `etcd://127.0.0.1:${this.port}`;
  }

  protected command(): ServerCommand {
    const client = `http://127.0.0.1:${this.port}`;
    const peer = `http://127.0.0.1:${this.peerPort}`;
    return {
      file: this.binary,
      args: [
        ...['--name', 'verify', '--data-dir', join(this.dir, 'data')],
        ...['--listen-client-urls', client, '--advertise-client-urls', client],
        ...['--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer],
        ...['--initial-cluster', `verify=${peer}`, '--initial-cluster-state', 'new'],
        ...['--initial-cluster-token', this.dir],
        ...['--heartbeat-interval', '10', '--election-timeout', '100'],
        ...['--logger', 'zap', '--log-outputs', 'stderr', '--log-level', 'warn'],
      ],
    };
  }

  protected async isReady(): Promise<boolean> {
    const response = await fetch(`http://127.0.0.1:${this.port}/health`, {
      signal: AbortSignal.timeout(500),
    });
    return ((await response.json()) as { health?: string }).health === 'true';
  }
}
