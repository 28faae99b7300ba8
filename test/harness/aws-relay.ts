import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request that reached the server: its operation (`X-Amz-Target`, DynamoDB's), method, URL and body. */
export interface RelayedRequest {
  readonly operation: string;
  readonly method: string;
  readonly url: string;
  readonly body: string;
  /** Its headers, names in lower case. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** An answer the relay gives itself instead of passing a request on. */
export interface RelayAnswer {
  readonly status: number;
  /** JSON (DynamoDB's errors), or text sent as it is (S3's XML). */
  readonly body: object | string;
}

/** A relay in front of an AWS endpoint (dynalite, radosgw) that counts and keeps what reaches it. */
export interface AwsRelay {
  /** `http://127.0.0.1:PORT`, to use as the store's endpoint. */
  readonly endpoint: string;
  /** Requests by operation since the last `clear()`. */
  readonly counts: Map<string, number>;
  /** Every request since the last `clear()`, in arrival order. */
  readonly requests: RelayedRequest[];
  /**
   * Looked at before each request is passed on (its body is not read yet): an answer it returns
   * goes back instead, and the request never reaches the server.
   */
  intercept: ((request: Omit<RelayedRequest, 'body'>) => RelayAnswer | undefined) | undefined;
  /**
   * Looked at with each answer the server gives (its body read whole, when not compressed): a
   * string it returns goes back instead of that body, with the server's status and headers (the
   * length fixed); `undefined` passes the answer on as it is. Unset, answers are piped through.
   */
  rewrite:
    | ((request: Omit<RelayedRequest, 'body'>, status: number, body: string) => string | undefined)
    | undefined;
  clear(): void;
  close(): Promise<void>;
}

/**
 * An HTTP relay on loopback in front of dynalite or radosgw that counts the requests reaching the server by
 * operation (`X-Amz-Target`) and keeps their bodies: what a store sends, the SDK's own retries
 * included.
 */
export async function awsRelay(target: { readonly endpoint: string }): Promise<AwsRelay> {
  const counts = new Map<string, number>();
  const requests: RelayedRequest[] = [];
  const relay = {
    intercept: undefined as AwsRelay['intercept'],
    rewrite: undefined as AwsRelay['rewrite'],
  };
  const server: Server = createServer((incoming, answer) => {
    const operation =
      String(incoming.headers['x-amz-target'] ?? '')
        .split('.')
        .pop() ?? '';
    const { headers } = incoming;
    const method = incoming.method ?? '';
    const url = incoming.url ?? '/';
    counts.set(operation, (counts.get(operation) ?? 0) + 1);
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () =>
      requests.push({
        operation,
        method,
        url,
        headers,
        body: Buffer.concat(chunks).toString('utf8'),
      }),
    );
    const own = relay.intercept?.({ operation, method, url, headers });
    if (own) {
      incoming.resume();
      incoming.on('end', () => {
        const text = typeof own.body === 'string';
        answer.writeHead(own.status, {
          'content-type': text ? 'application/xml' : 'application/x-amz-json-1.0',
        });
        answer.end(text ? own.body : JSON.stringify(own.body));
      });
      return;
    }
    const upstream = request(
      `${target.endpoint}${incoming.url ?? '/'}`,
      { method: incoming.method, headers: incoming.headers },
      (reply) => {
        const rewrite = relay.rewrite;
        if (!rewrite || reply.headers['content-encoding'] !== undefined) {
          answer.writeHead(reply.statusCode ?? 502, reply.headers);
          reply.pipe(answer);
          return;
        }
        const parts: Buffer[] = [];
        reply.on('data', (chunk: Buffer) => parts.push(chunk));
        reply.on('end', () => {
          const status = reply.statusCode ?? 502;
          const body = Buffer.concat(parts).toString('utf8');
          const text = rewrite({ operation, method, url, headers }, status, body) ?? body;
          const kept = { ...reply.headers };
          delete kept['x-amz-crc32']; // DynamoDB's checksum of the body it sent
          delete kept['transfer-encoding'];
          kept['content-length'] = String(Buffer.byteLength(text));
          answer.writeHead(status, kept);
          answer.end(text);
        });
      },
    );
    upstream.on('error', () => answer.destroy());
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    counts,
    requests,
    get intercept() {
      return relay.intercept;
    },
    set intercept(fn) {
      relay.intercept = fn;
    },
    get rewrite() {
      return relay.rewrite;
    },
    set rewrite(fn) {
      relay.rewrite = fn;
    },
    clear: () => {
      counts.clear();
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
