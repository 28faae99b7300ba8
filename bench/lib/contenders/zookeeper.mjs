// ZooKeeper: leasehold beside the bare compare-and-set of the same shape — per worker a
// persistent token znode and an ephemeral hold znode; acquire is one multi that creates the hold
// (refused while it exists) and writes the token znode, whose new version is the fencing token;
// release is one multi that checks the token znode is still at that version and deletes the
// hold. The hold lives on the contender's session (timeout = the TTL): the server ends it when
// the session expires; there is no deadline of the holder's own.
import { Buffer } from 'node:buffer';
import { clearTimeout } from 'node:timers';
import zookeeper from 'node-zookeeper-client';
import { fourLetter } from '../private-servers.mjs';
import { leaseholdContenders } from './leasehold.mjs';

const ROOT = '/bench_bare';
const EMPTY = Buffer.alloc(0);

export function contenders({ server, libs, ttlMs, maxInFlight }) {
  return [
    ...leaseholdContenders(libs, server.url, ttlMs),
    {
      name: 'bare',
      role: 'bare',
      describe:
        'node-zookeeper-client: multi(create ephemeral hold, setData token znode: its version is the token); multi(check token version, delete hold); the session’s timeout (the TTL) is the expiry',
      open: async () => {
        const client = await connect(server.endpoint, ttlMs);
        const token = (w) => `${ROOT}/t${w}`;
        const hold = (w) => `${ROOT}/h${w}`;
        await Promise.all(
          Array.from({ length: maxInFlight }, (_, w) =>
            call((done) => client.mkdirp(token(w), done)),
          ),
        );
        return {
          cycle: async (w) => {
            const owner = Buffer.from(`o${w}`);
            const acquired = await commit(
              client
                .transaction()
                .create(hold(w), owner, zookeeper.CreateMode.EPHEMERAL)
                .setData(token(w), EMPTY, -1),
            );
            const version = acquired[1].stat.version;
            // The hold's own version is always 0, which this driver sends as -1 (any): the
            // token znode's version is what names this grant.
            await commit(client.transaction().check(token(w), version).remove(hold(w), -1));
          },
          close: async () => client.close(),
        };
      },
    },
  ];
}

function connect(endpoint, sessionTimeout) {
  const client = zookeeper.createClient(endpoint, { sessionTimeout, spinDelay: 100, retries: 0 });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.close();
      reject(new Error(`no ZooKeeper session with ${endpoint} within 10 s`));
    }, 10_000);
    client.once('connected', () => {
      clearTimeout(timer);
      resolve(client);
    });
    client.connect();
  });
}

const call = (fn) =>
  new Promise((resolve, reject) => fn((error, value) => (error ? reject(error) : resolve(value))));

const commit = (tx) => call((done) => tx.commit(done));

/** Requests the server received (its `srvr` count; a four-letter word is not one of them). */
export async function probe(server) {
  return {
    read: async () => Number(/^Received: (\d+)/m.exec(await fourLetter(server.port, 'srvr'))[1]),
    close: async () => {},
  };
}
