import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * What the proxy does with bytes, decided per chunk as it arrives:
 * - `pass`: forwards both ways;
 * - `drop-responses`: forwards requests to the server but throws its answers away, so a write
 *   lands while its caller never hears back (a lost response);
 * - `blackhole`: throws away both directions; connections stay open, nothing answers (a partition).
 */
export type ProxyMode = 'pass' | 'drop-responses' | 'blackhole';

/** A loopback TCP proxy in front of one server, for partitions and lost responses in tests. */
export class TcpProxy {
  mode: ProxyMode = 'pass';
  /**
   * In `pass` mode, what is sent on for each answer chunk of the `index`-th connection (from 0):
   * a fault injected into the byte stream, say a server's FATAL right behind its answer.
   */
  rewrite: ((chunk: Buffer, index: number) => Buffer) | undefined;
  private accepted = 0;
  /** Chunks the proxy forwarded to the server, and answer chunks it threw away. */
  readonly counts = { forwarded: 0, droppedResponses: 0, droppedRequests: 0 };
  private readonly sockets = new Set<Socket>();
  private waiters: (() => void)[] = [];

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** Listens on a free 127.0.0.1 port and forwards each connection to `targetPort` there. */
  static async start(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
    const holder: { proxy?: TcpProxy } = {};
    const server = createServer((client) => holder.proxy?.accept(client, targetHost, targetPort));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (typeof address !== 'object' || address === null) throw new Error('proxy has no port');
    holder.proxy = new TcpProxy(server, address.port);
    return holder.proxy;
  }

  /** Resolves when the next answer chunk is thrown away in `drop-responses` mode. */
  nextDroppedResponse(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Resets every open connection (both sides see ECONNRESET or a close). */
  resetAll(): void {
    for (const socket of this.sockets) socket.resetAndDestroy();
    this.sockets.clear();
  }

  async stop(): Promise<void> {
    this.resetAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, host: string, port: number): void {
    const upstream = connect({ host, port });
    const index = this.accepted++;
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        this.sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', (chunk) => {
      if (this.mode === 'blackhole') {
        this.counts.droppedRequests++;
        return;
      }
      this.counts.forwarded++;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (this.mode === 'pass') {
        client.write(this.rewrite ? this.rewrite(chunk, index) : chunk);
        return;
      }
      this.counts.droppedResponses++;
      if (this.mode === 'drop-responses') {
        const waiters = this.waiters;
        this.waiters = [];
        for (const wake of waiters) wake();
      }
    });
  }
}
