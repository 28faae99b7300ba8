import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliFailure } from '../../output.js';
import { onPath } from './process-tree.js';
import { PrivateServer, type ServerCommand } from './private-server.js';

/**
 * verify's private redis-server. The append-only file with `appendfsync always` keeps every
 * acknowledged record across `store-restart`: a Redis without persistence comes back empty after a
 * crash, its tokens start again from 1, and verify rightly reports that as unsafe.
 */
export class PrivateRedis extends PrivateServer {
  readonly program = 'redis-server';

  private constructor(
    private readonly binary: string,
    readonly port: number,
  ) {
    super(mkdtempSync(join(tmpdir(), 'leasehold-verify-redis-')));
  }

  /** Throws a `CliFailure` (exit 2) naming the Debian package when redis-server is not installed. */
  static create(port: number): PrivateRedis {
    const binary = onPath('redis-server');
    if (!binary)
      throw new CliFailure(
        '--store redis: redis-server is not installed (on Debian: apt-get install redis-server)',
        2,
      );
    return new PrivateRedis(binary, port);
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  protected command(): ServerCommand {
    return {
      file: this.binary,
      args: [
        ...['--port', String(this.port), '--bind', '127.0.0.1', '--protected-mode', 'no'],
        ...['--dir', this.dir, '--save', '', '--daemonize', 'no', '--logfile', ''],
        ...['--appendonly', 'yes', '--appendfsync', 'always'],
      ],
    };
  }

  protected isReady(output: string): boolean {
    return output.includes('Ready to accept connections');
  }
}
