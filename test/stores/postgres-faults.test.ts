import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import pg from 'pg';
import { PostgresFence } from '../../src/fence/index.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { freshNamespace } from '../conformance/factory.js';
import { PostgresServer, postgresUnavailable } from '../harness/postgres-server.js';
import { waitFor } from '../harness/processes.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection, sleep } from '../harness/expect-error.js';
import { TcpProxy } from '../harness/tcp-proxy.js';

const unavailable = postgresUnavailable();

/** The ErrorResponse a backend sends when its postmaster dies under it. */
const FATAL_57P01 = (() => {
  const fields = Buffer.from(
    'SFATAL\0VFATAL\0C57P01\0Mterminating connection due to unexpected postmaster exit\0\0',
  );
  const header = Buffer.alloc(5);
  header.write('E', 0);
  header.writeUInt32BE(fields.length + 4, 1);
  return Buffer.concat([header, fields]);
})();

/**
 * Appends that FATAL to the answer chunk that ends a connection's handshake (its first
 * ReadyForQuery), so the driver reads both in one go: the connection is handed over and broken in
 * the same turn, before any promise continuation could attach a listener to it.
 */
function fatalAfterHandshake(): (chunk: Buffer, index: number) => Buffer {
  const done = new Set<number>();
  return (chunk, index) => {
    const ready = chunk.length >= 6 && chunk[chunk.length - 6] === 0x5a; // 'Z', length 5, status
    if (done.has(index) || !ready || chunk.readUInt32BE(chunk.length - 5) !== 5) return chunk;
    done.add(index);
    return Buffer.concat([chunk, FATAL_57P01]);
  };
}

/** Short deadlines so faults surface quickly: a silent server fails a call in ~0.5–1 s. */
const FAST = { statementTimeoutMs: 500, connectTimeoutMs: 1000 };

describeServer('PostgreSQL faults', unavailable, () => {
  let server: PostgresServer;
  const cleanup: (() => Promise<unknown>)[] = [];
  const store = async (table = freshNamespace()): Promise<PostgresStore> => {
    const opened = await PostgresStore.open(server.url, { ...FAST, table });
    cleanup.push(() => opened.close());
    return opened;
  };

  beforeAll(async () => {
    server = await PostgresServer.start();
  });
  afterEach(async () => {
    server.resume();
    for (const step of cleanup.splice(0)) await step().catch(() => {});
  });
  afterAll(async () => {
    await server?.stop();
  });

  // What the conformance fault topic leaves out: that each of the two timeouts says so.
  it('a paused server fails a statement and a connect by their own timeouts, named as such', async () => {
    // A paused server accepts TCP connections but never answers.
    const busy = await store();
    const lease = (await busy.tryAcquire('r', 'a', 5000))!; // table ready, a pooled connection open
    const fresh = await store();
    server.pause();
    const midFlight = await rejection(busy.renew(lease));
    expect([midFlight.code, midFlight.retryable]).toEqual(['STORE_UNAVAILABLE', true]);
    expect(midFlight.message).toMatch(/timeout/i);
    const connecting = await rejection(fresh.init());
    expect([connecting.code, connecting.retryable]).toEqual(['STORE_UNAVAILABLE', true]);
    expect(connecting.message).toMatch(/timeout/i);
    server.resume();

    expect(await busy.renew(lease)).toMatchObject({ owner: 'a', token: 1 });
    await fresh.init();
  });

  // A backend forked while the server is being killed answers its handshake and then says FATAL,
  // often in one read. node-postgres' pool hands a connection out with no 'error' listener and
  // the hand-over reaches a promise's continuation only after that read: without a listener of
  // our own attached in the same turn, the FATAL was an uncaught exception that ended the process.
  it('a FATAL in the same read as the end of the handshake fails the call, not the process', async () => {
    const proxy = await TcpProxy.start(server.port);
    cleanup.push(() => proxy.stop());
    const url = server.url.replace(`:${server.port}/`, `:${proxy.port}/`);
    const table = freshNamespace();
    const opened = await PostgresStore.open(url, { ...FAST, table, poolSize: 2 });
    cleanup.push(() => opened.close());
    const watchErrors: unknown[] = [];
    const watching = await PostgresStore.open(url, {
      ...FAST,
      table,
      onWatchError: (error) => watchErrors.push(error),
    });
    cleanup.push(() => watching.close());
    const fencePool = new pg.Pool({ connectionString: url, max: 1 });
    fencePool.on('error', () => {}); // a user's pool: its idle connections are its own to watch
    cleanup.push(() => fencePool.end());
    const fence = new PostgresFence(fencePool, { table: `${table}_fence` });

    proxy.rewrite = fatalAfterHandshake();
    // The first call's connection (the schema check, on a connection of its own).
    const first = await rejection(opened.tryAcquire('job', 'a', 5000));
    expect([first.code, first.retryable]).toEqual(['STORE_UNAVAILABLE', true]);
    // A statement's connection, once the schema is known.
    proxy.rewrite = undefined;
    await opened.init();
    await fence.init();
    proxy.resetAll(); // the pooled connections go; the next calls open new ones
    await sleep(100);
    proxy.rewrite = fatalAfterHandshake();
    const statement = await rejection(opened.tryAcquire('job', 'a', 5000));
    expect([statement.code, statement.retryable]).toEqual(['STORE_UNAVAILABLE', true]);
    // The watch's LISTEN connection.
    const unwatch = watching.watch('', () => {});
    await waitFor(
      'the watch to report its broken connection',
      () => watchErrors.length > 0,
      10_000,
    );
    unwatch();
    // A fenced write's connection from a pool of the user's.
    await expect(fence.write('job', 1, () => 'written')).rejects.toThrow(/not queryable|terminat/i);

    proxy.rewrite = undefined;
    const lease = await opened.tryAcquire('job', 'a', 5000);
    expect(lease).toMatchObject({ owner: 'a', token: 1 }); // nothing was written by the failed calls
    expect(await opened.release(lease!)).toBe(true);
  });
});
