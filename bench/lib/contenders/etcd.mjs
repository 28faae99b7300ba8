// etcd: leasehold beside the bare compare-and-set of the same shape (one Txn with a version
// compare and a put on an etcd lease to acquire, whose revision is the token; one Txn comparing
// that revision to release) and etcd3's own Lock and Election.
import { Buffer } from 'node:buffer';
import { Etcd3 } from 'etcd3';
import { leaseholdContenders } from './leasehold.mjs';

const { fetch } = globalThis;

export const PEER_NOTES = {
  'etcd3 Lock':
    'no fencing token handed out; the holder learns of a lost etcd lease only from a failed keep-alive, not at a deadline of its own',
  'etcd3 Election':
    'no fencing token handed out; leadership ends only when the client notices its etcd lease is gone',
};

export function contenders({ server, libs, ttlMs, maxInFlight }) {
  const ttlS = Math.ceil(ttlMs / 1000);
  const connect = () => new Etcd3({ hosts: `http://${server.endpoint}` });
  return [
    ...leaseholdContenders(libs, server.url, ttlMs),
    {
      name: 'bare',
      role: 'bare',
      describe:
        'etcd3: Txn(version = 0 → put on a lease), token = revision; Txn(mod = token → delete)',
      open: async () => {
        const client = connect();
        const leases = await Promise.all(
          Array.from({ length: maxInFlight }, () =>
            client.leaseClient.leaseGrant({ TTL: ttlS * 10 }),
          ),
        );
        const keys = leases.map((_, w) => Buffer.from(`/bare/k${w}`));
        return {
          cycle: async (w) => {
            const key = keys[w];
            const acquired = await client.kv.txn({
              compare: [{ key, target: 'Version', result: 'Equal', version: 0 }],
              success: [{ request_put: { key, value: Buffer.from(`o${w}`), lease: leases[w].ID } }],
              failure: [],
            });
            if (!acquired.succeeded) throw new Error('bare: not acquired');
            const released = await client.kv.txn({
              compare: [
                { key, target: 'Mod', result: 'Equal', mod_revision: acquired.header.revision },
              ],
              success: [{ request_delete_range: { key } }],
              failure: [],
            });
            if (!released.succeeded) throw new Error('bare: release refused');
          },
          close: async () => client.close(),
        };
      },
    },
    {
      name: 'etcd3 Lock',
      role: 'peer',
      describe: 'client.lock(key).ttl(s).acquire(); release()',
      note: PEER_NOTES['etcd3 Lock'],
      open: async () => {
        const client = connect();
        return {
          cycle: async (w) => {
            const lock = client.lock(`/lock/k${w}`).ttl(ttlS);
            await lock.acquire();
            await lock.release();
          },
          close: async () => client.close(),
        };
      },
    },
    {
      name: 'etcd3 Election',
      role: 'peer',
      describe: 'client.election(key, ttl).campaign(id): wait(); resign()',
      note: PEER_NOTES['etcd3 Election'],
      open: async () => {
        const client = connect();
        return {
          cycle: async (w) => {
            const campaign = client.election(`/election/e${w}`, ttlS).campaign(`o${w}`);
            await campaign.wait();
            await campaign.resign();
          },
          close: async () => client.close(),
        };
      },
    },
  ];
}

/** gRPC calls the server started, from its /metrics (an HTTP read: not itself counted). */
export async function probe(server) {
  return {
    read: async () => {
      const text = await (await fetch(`http://${server.endpoint}/metrics`)).text();
      let sum = 0;
      for (const [, value] of text.matchAll(/^grpc_server_started_total\{[^}]*\} (\S+)$/gm))
        sum += Number(value);
      return sum;
    },
    close: async () => {},
  };
}
