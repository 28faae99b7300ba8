import { connect, createServer, type Server, type Socket } from 'node:net';

/** ZooKeeper request types by opcode, as they travel on the wire. */
const OPS: Readonly<Record<number, string>> = {
  1: 'create',
  2: 'delete',
  3: 'exists',
  4: 'getData',
  5: 'setData',
  8: 'getChildren',
  12: 'getChildren', // getChildren2: the children and the parent's stat
  14: 'multi',
};
/** Session upkeep, not the store's requests: ping, setWatches, closeSession, auth. */
const UPKEEP = new Set([11, 101, -11, 100]);

/**
 * A TCP relay on loopback in front of ZooKeeper that reads the request frames each client sends
 * (a 4-byte length, then the request header: xid and opcode) and counts them by type: what
 * reaches the server, session pings and the connect handshake left out.
 */
export async function countingRelay(targetPort: number): Promise<{
  port: number;
  counts: Map<string, number>;
  /** Bytes of the requests counted in `counts` (frames with their length prefix). */
  sent: { bytes: number };
  /** The most requests of a type that were awaiting their answer at once, by type. */
  inFlightMax: Map<string, number>;
  close(): Promise<void>;
}> {
  const counts = new Map<string, number>();
  const sent = { bytes: 0 };
  const inFlightMax = new Map<string, number>();
  const inFlight = new Map<string, number>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect({ host: '127.0.0.1', port: targetPort });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    let pending = Buffer.alloc(0);
    let handshake = true;
    /** Requests of this connection awaiting their answer: xid → type. */
    const awaiting = new Map<number, string>();
    let answers = Buffer.alloc(0);
    let connected = false;
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
        const frame = pending.subarray(4, 4 + pending.readInt32BE(0));
        pending = pending.subarray(4 + frame.length);
        if (handshake) {
          handshake = false; // the connect request has no request header
          continue;
        }
        const type = frame.readInt32BE(4);
        if (UPKEEP.has(type)) continue;
        const name = OPS[type] ?? `op${type}`;
        counts.set(name, (counts.get(name) ?? 0) + 1);
        sent.bytes += 4 + frame.length;
        awaiting.set(frame.readInt32BE(0), name);
        const now = (inFlight.get(name) ?? 0) + 1;
        inFlight.set(name, now);
        inFlightMax.set(name, Math.max(now, inFlightMax.get(name) ?? 0));
      }
    });
    upstream.on('data', (chunk: Buffer) => {
      client.write(chunk);
      // Answers carry their request's xid first (notifications carry -1, pings -2).
      answers = Buffer.concat([answers, chunk]);
      while (answers.length >= 4 && answers.length >= 4 + answers.readInt32BE(0)) {
        const frame = answers.subarray(4, 4 + answers.readInt32BE(0));
        answers = answers.subarray(4 + frame.length);
        if (!connected) {
          connected = true; // the connect answer has no reply header
          continue;
        }
        const name = awaiting.get(frame.readInt32BE(0));
        if (name === undefined) continue;
        awaiting.delete(frame.readInt32BE(0));
        inFlight.set(name, (inFlight.get(name) ?? 1) - 1);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('relay has no port');
  return {
    port: address.port,
    counts,
    sent,
    inFlightMax,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
