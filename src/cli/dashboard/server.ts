import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { redact } from '../../core/store-url.js';
import type { LeaseStore } from '../../core/store.js';
import { errorLine, scrubPassword } from '../output.js';
import { quoted } from '../escape.js';
import { carriesToken, hostAllowed } from './access.js';
import { storeMetrics } from './store-metrics.js';
import { LeaseObserver } from '../live/observer.js';
import { pageHtml } from './page.js';
import { SseHub } from './sse.js';
import { Wire, type PageSettings } from './wire.js';

/** Serves `GET /metrics`; the dashboard answers 404 there without one. */
export type MetricsHandler = (
  request: IncomingMessage,
  response: ServerResponse,
) => void | Promise<void>;

export interface DashboardOptions {
  /** The store to show; the dashboard never closes it. */
  store: LeaseStore;
  /** The store's URL: shown on the page with its password hidden, and scrubbed from error text. */
  storeUrl?: string;
  /** The TCP port; `0` picks a free one. @default 7878 */
  port?: number;
  /** The address to listen on. @default '127.0.0.1' */
  host?: string;
  /** The time between two listings of the store, in ms. @default 1000 */
  pollMs?: number;
  /** How much ownership history the server keeps and the timeline can show, in ms. @default 300000 */
  historyMs?: number;
  /** Turns on the force-release action; each request must carry this token. */
  adminToken?: string;
  /** Serves `GET /metrics` when given. */
  metrics?: MetricsHandler;
  /** Where a force release is logged (names already escaped for a terminal). @default no log */
  log?: (line: string) => void;
}

export const DASHBOARD_DEFAULTS = Object.freeze({
  port: 7878,
  host: '127.0.0.1',
  pollMs: 1000,
  historyMs: 300_000,
});

export interface Dashboard {
  /** The page's address, e.g. `http://127.0.0.1:7878/`. */
  readonly url: string;
  /** Stops watching the store and closes the server and its streams (not the store). */
  close(): Promise<void>;
}

/** A force-release request body larger than this is refused. */
const MAX_BODY = 4096;

/**
 * Starts the dashboard: lists the store once, then serves the page at `/`, its event stream at
 * `/events` (a snapshot, then an update after each listing), the current state at `/api/state`,
 * `POST /api/release` when `adminToken` is set, and `/metrics` when `metrics` is given.
 */
export async function startDashboard(options: DashboardOptions): Promise<Dashboard> {
  const { store } = options;
  const host = options.host ?? DASHBOARD_DEFAULTS.host;
  const observer = new LeaseObserver({
    store,
    pollMs: options.pollMs ?? DASHBOARD_DEFAULTS.pollMs,
    historyMs: options.historyMs ?? DASHBOARD_DEFAULTS.historyMs,
  });
  await observer.start();
  // Without a handler of the caller's, /metrics serves what the dashboard observes (prom-client).
  const observed = options.metrics
    ? undefined
    : await storeMetrics(observer, store.maxClockSkewMs).catch((error: unknown) => error as Error);
  const metrics = options.metrics ?? (observed instanceof Error ? undefined : observed?.handler);
  const settings: PageSettings = {
    store:
      options.storeUrl === undefined ? '(a store opened by the program)' : redact(options.storeUrl),
    clock: store.capabilities.clock,
    skewMs: store.maxClockSkewMs,
    pollMs: observer.pollMs,
    watch: observer.watching,
    historyMs: observer.historyMs,
    admin: options.adminToken !== undefined,
  };
  const describe = (error: unknown): string => scrubPassword(errorLine(error), options.storeUrl);
  const wire = new Wire(observer, settings, describe);
  const hub = new SseHub();
  observer.onUpdate((update) => hub.send('update', wire.update(update)));

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    if (!hostAllowed(request, host)) return send(response, 403, 'text/plain', 'unknown Host\n');
    const path = new URL(request.url ?? '/', 'http://dashboard').pathname;
    const method = request.method ?? 'GET';
    if (method === 'GET' && path === '/') {
      const nonce = randomBytes(16).toString('base64');
      response.setHeader(
        'Content-Security-Policy',
        `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
      );
      return send(response, 200, 'text/html; charset=utf-8', pageHtml(settings, nonce));
    }
    if (method === 'GET' && path === '/events') {
      hub.add(response, 'snapshot', wire.snapshot(Date.now()));
      return;
    }
    if (method === 'GET' && path === '/api/state')
      return sendJson(response, 200, wire.snapshot(Date.now()));
    if (method === 'GET' && path === '/metrics') {
      if (metrics) return metrics(request, response);
      return send(response, 501, 'text/plain', `${describe(observed)}\n`);
    }
    if (method === 'POST' && path === '/api/release') {
      if (options.adminToken === undefined || !carriesToken(request, options.adminToken))
        return sendJson(response, 403, { error: 'forbidden: the admin token is missing or wrong' });
      const body = await readJson(request);
      if (
        typeof body !== 'object' ||
        body === null ||
        typeof (body as { resource?: unknown }).resource !== 'string' ||
        !Number.isSafeInteger((body as { token?: unknown }).token)
      )
        return sendJson(response, 400, {
          error: 'expected {"resource": string, "token": integer}',
        });
      const { resource, token } = body as { resource: string; token: number };
      const record = await store.get(resource);
      if (!record || record.owner === '' || record.token !== token)
        return sendJson(response, 409, {
          released: false,
          error: 'the lease is no longer held with that token',
        });
      const released = await store.release({ resource, owner: record.owner, token });
      options.log?.(
        `force-released ${quoted(resource)} (owner ${quoted(record.owner)}, token ${token}): ${released}`,
      );
      observer.refresh();
      return sendJson(response, released ? 200 : 409, { released });
    }
    return send(response, 404, 'text/plain', 'not found\n');
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (response.headersSent) response.destroy();
      else sendJson(response, 500, { error: describe(error) });
    });
  });
  server.listen(options.port ?? DASHBOARD_DEFAULTS.port, host);
  try {
    await once(server, 'listening');
  } catch (error) {
    if (observed && !(observed instanceof Error)) observed.stop();
    await observer.stop();
    hub.close();
    throw error;
  }
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${shown}:${address.port}/`,
    close: () =>
      (closing ??= (async () => {
        if (observed && !(observed instanceof Error)) observed.stop();
        hub.close();
        await observer.stop();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
      })()),
  };
}

function send(response: ServerResponse, status: number, type: string, body: string): void {
  response.writeHead(status, {
    'Content-Type': type,
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
  });
  response.end(body);
}

function sendJson(response: ServerResponse, status: number, value: unknown): void {
  send(response, status, 'application/json; charset=utf-8', JSON.stringify(value));
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) return undefined;
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}
