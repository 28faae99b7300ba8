/**
 * node-postgres' `Pool.connect`, in the shape both the PostgreSQL store and fence use: the
 * callback form (node-postgres calls it in the same turn it hands the connection over), with the
 * promise form as the fallback for a pool shaped like it that has no callback form.
 */
export interface PgCheckOutPool<C> {
  connect(callback?: (error: Error | undefined, client: C | undefined) => void): unknown;
}

interface Listening {
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/** Connections that already carry the listener. */
const guarded = new WeakSet<object>();
const ignore = (): void => {};

/**
 * Checks a connection out of `pool` with an 'error' listener attached in the very turn it is
 * handed over. node-postgres' pool takes its own listener off a connection it hands out, and a
 * promise continuation runs only after the read that completed the hand-over: when a server that
 * is going down sends its FATAL right behind the handshake or a statement's answer, in one read,
 * the error is emitted in between, on a connection nobody listens to — an uncaught exception
 * that ends the process. The listener only keeps it from throwing: such a connection is no longer
 * queryable, its next statement fails with an error of its own, and the pool drops it on release.
 */
export function checkOut<C extends object>(pool: PgCheckOutPool<C>): Promise<C> {
  return new Promise<C>((resolve, reject) => {
    const handOver = (client: C): void => {
      if (!guarded.has(client)) {
        guarded.add(client);
        (client as unknown as Listening).on('error', ignore);
      }
      resolve(client);
    };
    const answer = pool.connect((error, client) => {
      if (error || !client) reject(error ?? new Error('the pool handed over no connection'));
      else handOver(client);
    });
    if (answer !== null && typeof answer === 'object' && 'then' in answer)
      (answer as Promise<C>).then(handOver, reject);
  });
}
