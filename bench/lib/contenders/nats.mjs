// NATS JetStream KV: leasehold beside the bare compare-and-set of the same shape — one key per
// worker holding {owner, token, expiresAt}; acquire writes token + 1 conditioned on the revision
// it knows (its own last write, so one request while nobody else writes the key), release writes
// the owner empty conditioned on the acquire's revision; the caller's clock decides expiry, with
// leasehold's default 1 s skew allowance.
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { leaseholdContenders } from './leasehold.mjs';

const SKEW_MS = 1000;
const { TextEncoder, TextDecoder } = globalThis;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function contenders({ server, libs, ttlMs }) {
  return [
    ...leaseholdContenders(libs, server.url, ttlMs),
    {
      name: 'bare',
      role: 'bare',
      describe:
        '@nats-io/kv: update conditioned on the last revision it wrote, each way (a read only when it is stale)',
      open: async () => {
        const nc = await connect({ servers: `127.0.0.1:${server.port}` });
        const kv = await new Kvm(jetstream(nc)).create('bench_bare', { history: 1 });
        const known = new Map();
        const write = (key, record, revision) =>
          revision === 0
            ? kv.create(key, encoder.encode(JSON.stringify(record)))
            : kv.update(key, encoder.encode(JSON.stringify(record)), revision);
        return {
          cycle: async (w) => {
            const key = `job.${w}`;
            const owner = `o${w}`;
            let last = known.get(key) ?? { revision: 0, record: null };
            let revision;
            let token;
            for (;;) {
              const now = Date.now();
              const held =
                last.record && last.record.owner !== '' && last.record.expiresAt + SKEW_MS >= now;
              if (held) throw new Error(`bench key ${key} is held`);
              token = (last.record?.token ?? 0) + 1;
              try {
                revision = await write(
                  key,
                  { owner, token, expiresAt: now + ttlMs },
                  last.revision,
                );
                break;
              } catch {
                const entry = await kv.get(key); // stale: read, then try again
                last = entry
                  ? { revision: entry.revision, record: JSON.parse(decoder.decode(entry.value)) }
                  : { revision: 0, record: null };
              }
            }
            const released = { owner: '', token, expiresAt: 0 };
            const after = await kv.update(key, encoder.encode(JSON.stringify(released)), revision);
            known.set(key, { revision: after, record: released });
          },
          close: async () => nc.close(),
        };
      },
    },
  ];
}
