import type { ServerResponse } from 'node:http';

/** A client further behind than this is dropped; its `EventSource` reconnects and gets a snapshot. */
const MAX_BUFFERED = 16 * 1024 * 1024;
const KEEP_ALIVE_MS = 15_000;

/** The open server-sent-event streams, each sent every message. */
export class SseHub {
  private readonly clients = new Set<ServerResponse>();
  private readonly timer: NodeJS.Timeout;

  constructor() {
    this.timer = setInterval(() => this.sendRaw(': keep-alive\n\n'), KEEP_ALIVE_MS);
    this.timer.unref();
  }

  /** Opens a stream on `response` and sends it `first`. */
  add(response: ServerResponse, event: string, first: unknown): void {
    response.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Content-Type-Options': 'nosniff',
    });
    this.clients.add(response);
    response.on('close', () => this.clients.delete(response));
    response.write(frame(event, first));
  }

  get size(): number {
    return this.clients.size;
  }

  send(event: string, data: unknown): void {
    if (this.clients.size > 0) this.sendRaw(frame(event, data));
  }

  close(): void {
    clearInterval(this.timer);
    for (const client of this.clients) client.end();
    this.clients.clear();
  }

  private sendRaw(text: string): void {
    for (const client of this.clients) {
      if (client.writableLength > MAX_BUFFERED) {
        client.destroy();
        this.clients.delete(client);
      } else client.write(text);
    }
  }
}

/** One event; JSON never holds a raw line break, so `data` is one line. */
function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}
