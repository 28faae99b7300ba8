import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { diagnoseStore, type Diagnosis } from '../../src/index.js';
import { NatsStore } from '../../src/stores/nats/index.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';
import { NatsCluster, NatsServer, natsUnavailable } from '../harness/nats-server.js';
import { waitFor } from '../harness/processes.js';

/** The ids and levels of a diagnosis, for one assertion. */
const found = (d: Pick<Diagnosis, 'findings'>): string[] =>
  d.findings.map((f) => `${f.id} ${f.level}`);

/** What every bucket on nats-server 2.9 (the one here) reports besides its own findings. */
const FSYNC = 'nats.sync-interval unsafe';

// One single server for the file (buckets changed behind the store's back with a connection of
// their own); a three-server cluster, and a server with a password, where a test needs them.
describeServer('nats doctor', natsUnavailable(), () => {
  let server: NatsServer;
  let nc: NatsConnection;
  const cleanup: (() => Promise<unknown>)[] = [];

  const open = async (url: string): Promise<NatsStore> => {
    const store = await NatsStore.open(url);
    cleanup.push(() => store.close());
    return store;
  };

  beforeAll(async () => {
    server = await NatsServer.start();
    nc = await connect({ servers: `127.0.0.1:${server.port}` });
  });
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  it('a bucket as the store makes it, on one 2.9 server: nats.single-replica, and nats.sync-interval; one request, nothing written', async () => {
    const store = await open(`${server.url}?bucket=doctor`);
    await store.tryAcquire('job', 'a', 5000);
    const jsm = await jetstreamManager(nc);
    const before = (await jsm.streams.info('KV_doctor')).state.last_seq;
    const { result, msgs } = await server.receivedDuring(() => diagnoseStore(store));
    expect(found(result)).toEqual([FSYNC, 'nats.single-replica warning']);
    expect(msgs).toBe(1); // the stream info request
    expect((await jsm.streams.info('KV_doctor')).state.last_seq).toBe(before);

    const [fsync, replicas] = result.findings;
    expect(fsync!.observed).toMatch(
      /^nats-server 2\.9\.\d+: no sync_interval setting \(before 2\.10, JetStream fsyncs its files once a minute\)$/,
    );
    expect(fsync!.risk).toContain('OS crash or power loss');
    expect(fsync!.fix).toContain('sync_interval: always');
    expect(replicas!.observed).toBe('stream KV_doctor: num_replicas 1');
    expect(replicas!.fix).toContain('num_replicas 3');
    expect(result.checked).toEqual([
      'stream info of KV_doctor: storage, num_replicas, max_age',
      `the server's version, from its INFO when the connection was made: ${nc.info!.version}`,
    ]);
  });

  it('a bucket made again in memory under an open store is nats.memory-storage (which opening refuses)', async () => {
    const store = await open(`${server.url}?bucket=remade`);
    await (await jetstreamManager(nc)).streams.delete('KV_remade');
    await new Kvm(jetstream(nc)).create('remade', { history: 1, storage: 'memory' });
    const { findings } = await diagnoseStore(store);
    expect(found({ findings })).toEqual([
      'nats.memory-storage unsafe',
      FSYNC,
      'nats.single-replica warning',
    ]);
    expect(findings[0]!.observed).toBe('stream KV_remade: storage memory');
    expect(findings[0]!.risk).toContain('tokens start again at 1');
    expect(findings[0]!.fix).toContain('file storage');
    const refused = await rejection(NatsStore.open(`${server.url}?bucket=remade`));
    expect(refused.code).toBe('STORE_UNSAFE');
  });

  it('a max age set on the stream under an open store is nats.max-age', async () => {
    const store = await open(`${server.url}?bucket=aged`);
    const jsm = await jetstreamManager(nc);
    // Ten minutes, in ns: a max age may not be below the duplicate window (two minutes).
    await jsm.streams.update('KV_aged', { max_age: 600_000 * 1_000_000 });
    const { findings } = await diagnoseStore(store);
    expect(found({ findings })).toEqual([
      'nats.max-age unsafe',
      FSYNC,
      'nats.single-replica warning',
    ]);
    expect(findings[0]!.observed).toBe('stream KV_aged: max_age 600000 ms');
    expect(findings[0]!.fix).toContain('max_age 0');
    await jsm.streams.update('KV_aged', { max_age: 0 });
    expect(found(await diagnoseStore(store))).toEqual([FSYNC, 'nats.single-replica warning']);
  });

  it('three replicas on a three-server JetStream cluster: no nats.single-replica; before 2.9.21, nats.clustered-cas', async () => {
    const cluster = await NatsCluster.start();
    cleanup.push(() => cluster.stop());
    const admin = await connect({ servers: cluster.servers.map((s) => `127.0.0.1:${s.port}`) });
    cleanup.push(() => admin.close());
    // The cluster takes a moment to elect its meta leader and know every peer.
    await waitFor(
      'a stream with 3 replicas',
      async () => {
        try {
          await new Kvm(jetstream(admin)).create('r3', {
            history: 1,
            storage: 'file',
            replicas: 3,
          });
          return true;
        } catch {
          return false;
        }
      },
      15_000,
    );
    const store = await open(`${cluster.url}?bucket=r3&createBucket=false`);
    const { findings } = await diagnoseStore(store);
    // 2.9 before 2.9.21 checks a clustered stream's expected revision outside Raft.
    expect(found({ findings })).toEqual(['nats.clustered-cas unsafe', FSYNC]);
    expect(findings[0]!.observed).toBe(
      `nats-server ${admin.info!.version} with stream KV_r3 at num_replicas 3`,
    );
    expect(findings[0]!.risk).toContain('nats-io/nats-server#4320');
    expect(findings[0]!.fix).toContain('2.9.21');
    expect(findings[1]!.risk).toContain('lose power together');
    // The store makes such a bucket itself with ?replicas=3.
    const made = await open(`${cluster.url}?bucket=r3b&replicas=3`);
    await made.tryAcquire('job', 'a', 5000);
    const info = await (await jetstreamManager(admin)).streams.info('KV_r3b');
    expect(info.config.num_replicas).toBe(3);
  }, 30_000);

  it('shows no password in findings or errors; a paused server is STORE_UNAVAILABLE at the deadline, a stopped one too, and a closed store at once', async () => {
    const password = 'pw-s3cret-4711';
    const locked = await NatsServer.start({ args: ['--user', 'lh', '--pass', password] });
    cleanup.push(() => locked.stop());
    const store = await open(
      `nats://lh:${password}@127.0.0.1:${locked.port}?bucket=doctor&timeoutMs=1000`,
    );
    const diagnosis = await diagnoseStore(store);
    expect(found(diagnosis)).toEqual([FSYNC, 'nats.single-replica warning']);
    expect(JSON.stringify(diagnosis)).not.toContain(password);

    locked.pause();
    try {
      const paused = await rejection(diagnoseStore(store), 5000);
      expect(paused.code).toBe('STORE_UNAVAILABLE');
      expect(paused.message).toMatch(/^NATS KV diagnose on bucket "doctor" failed: /);
      expect(paused.message).not.toContain(password);
    } finally {
      locked.resume();
    }
    await locked.stop();
    const stopped = await rejection(diagnoseStore(store), 5000);
    expect(stopped.code).toBe('STORE_UNAVAILABLE');
    expect(stopped.message).toMatch(/^NATS KV diagnose on bucket "doctor" failed: /);
    expect(stopped.message).not.toContain(password);

    await store.close();
    const closed = await rejection(diagnoseStore(store));
    expect(closed.message).toBe('diagnose failed: the store is closed');
  });
});
