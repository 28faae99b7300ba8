import { Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { diagnoseStore, openStore, type Diagnosis, type LeaseStore } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';
import { waitFor } from '../harness/processes.js';
import { RedisCluster, RedisServer, redisUnavailable } from '../harness/redis-server.js';
import { commandsDuring } from '../stores/redis-command-calls.js';

/** The ids and levels of a diagnosis, for one assertion. */
const found = (d: Pick<Diagnosis, 'findings'>): string[] =>
  d.findings.map((f) => `${f.id} ${f.level}`);

/** The harness's settings (no persistence, AOF fsynced on every write when on, no memory limit). */
const DEFAULTS = [
  ...['save', '', 'appendonly', 'no', 'appendfsync', 'always'],
  ...['no-appendfsync-on-rewrite', 'no', 'maxmemory', '0', 'maxmemory-policy', 'noeviction'],
  ...['min-replicas-to-write', '0'],
];

// One primary for the file, its settings flipped at run time with CONFIG SET and put back after
// each test; other servers (a replica, CONFIG renamed away, a password, a cluster) where a test
// needs them.
describeServer('redis doctor', redisUnavailable(), () => {
  let server: RedisServer;
  let store: LeaseStore;
  const cleanup: (() => Promise<unknown>)[] = [];

  const configSet = (...pairs: string[]): Promise<string> => server.cli('config', 'set', ...pairs);

  beforeAll(async () => {
    server = await RedisServer.start();
    store = await openStore(`${server.url}?prefix=doctor:`);
  });
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
    await configSet(...DEFAULTS);
  });
  afterAll(async () => {
    await store?.close();
    await server?.stop();
  });

  it('the harness default (no AOF, no snapshots) is redis.no-persistence, and reading writes nothing', async () => {
    const keys = await server.cli('dbsize');
    const { result, ran } = await commandsDuring(server, () => diagnoseStore(store));
    expect(found(result)).toEqual(['redis.no-persistence unsafe']);
    const [f] = result.findings;
    expect(f!.observed).toBe('appendonly no, save ""');
    expect(f!.risk).toContain('tokens start again at 1');
    expect(f!.fix).toContain('appendonly yes with appendfsync always');
    expect(result.checked).toEqual([
      'INFO persistence',
      'INFO replication',
      'INFO memory',
      'CONFIG GET save, appendfsync, no-appendfsync-on-rewrite, replica-read-only, min-replicas-to-write',
    ]);
    expect(ran).toEqual({ 'config|get': 5 }); // and INFO, which the count leaves out: no write
    expect(await server.cli('dbsize')).toBe(keys);
  });

  it('RDB snapshots without AOF are redis.no-aof', async () => {
    await configSet('save', '60 1');
    const { findings } = await diagnoseStore(store);
    expect(found({ findings })).toEqual(['redis.no-aof unsafe']);
    expect(findings[0]!.observed).toBe('appendonly no, save "60 1" (RDB snapshots only)');
    expect(findings[0]!.risk).toContain('since the last RDB snapshot');
  });

  it('AOF fsynced before every reply is clean; everysec, no, or no fsync during rewrites is redis.aof-fsync', async () => {
    await configSet('appendonly', 'yes', 'appendfsync', 'always');
    expect(found(await diagnoseStore(store))).toEqual([]);

    await configSet('appendfsync', 'everysec');
    let { findings } = await diagnoseStore(store);
    expect(found({ findings })).toEqual(['redis.aof-fsync unsafe']);
    expect(findings[0]!.observed).toBe('appendonly yes, appendfsync everysec');
    expect(findings[0]!.risk).toContain('about the last second');
    expect(findings[0]!.fix).toContain('appendfsync always');

    await configSet('appendfsync', 'no');
    ({ findings } = await diagnoseStore(store));
    expect(found({ findings })).toEqual(['redis.aof-fsync unsafe']);
    expect(findings[0]!.observed).toBe('appendonly yes, appendfsync no');
    expect(findings[0]!.risk).toContain('never fsyncs');

    await configSet('appendfsync', 'always', 'no-appendfsync-on-rewrite', 'yes');
    ({ findings } = await diagnoseStore(store));
    expect(found({ findings })).toEqual(['redis.aof-fsync unsafe']);
    expect(findings[0]!.observed).toContain('no-appendfsync-on-rewrite yes');
    expect(findings[0]!.fix).toBe('no-appendfsync-on-rewrite no');
  });

  it('a memory limit with an allkeys-* policy is redis.eviction; volatile-*, noeviction or no limit are not', async () => {
    await configSet('appendonly', 'yes'); // only the eviction finding left to look at
    await configSet('maxmemory', '100mb', 'maxmemory-policy', 'allkeys-lru');
    const { findings } = await diagnoseStore(store);
    expect(found({ findings })).toEqual(['redis.eviction unsafe']);
    expect(findings[0]!.observed).toBe(
      'maxmemory 104857600 (100.00M), maxmemory-policy allkeys-lru',
    );
    expect(findings[0]!.fix).toContain('noeviction');

    for (const policy of ['volatile-lru', 'noeviction']) {
      await configSet('maxmemory-policy', policy);
      expect(found(await diagnoseStore(store)), policy).toEqual([]);
    }
    await configSet('maxmemory', '0', 'maxmemory-policy', 'allkeys-lfu');
    expect(found(await diagnoseStore(store))).toEqual([]);
  });

  it('connected replicas are redis.async-replication, min-replicas-to-write or not; a replica is redis.replica, a writable one redis.writable-replica', async () => {
    const replica = await RedisServer.start({ replicaOf: server.port });
    cleanup.push(() => replica.stop());
    await waitFor('the primary to count its replica', async () =>
      (await server.cli('info', 'replication')).includes('connected_slaves:1'),
    );
    await configSet('appendonly', 'yes'); // only the replication finding left to look at

    let { findings } = await diagnoseStore(store);
    expect(found({ findings })).toEqual(['redis.async-replication unsafe']);
    expect(findings[0]!.observed).toBe('role:master, connected_slaves:1, min-replicas-to-write 0');
    expect(findings[0]!.risk).toContain('asynchronously');
    await configSet('min-replicas-to-write', '1');
    ({ findings } = await diagnoseStore(store));
    expect(found({ findings })).toEqual(['redis.async-replication unsafe']);
    expect(findings[0]!.observed).toContain('min-replicas-to-write 1');
    expect(findings[0]!.risk).toContain('it narrows that window, it does not close it');

    // A store on the replica (made without opening, which would write the layout and fail).
    const raw = new Redis({ host: '127.0.0.1', port: replica.port });
    cleanup.push(async () => raw.disconnect());
    const onReplica = new RedisStore(raw, { prefix: 'doctor:', commandTimeoutMs: 2000 });
    ({ findings } = await diagnoseStore(onReplica));
    expect(found({ findings })).toEqual(['redis.no-persistence unsafe', 'redis.replica warning']);
    expect(findings[1]!.observed).toBe(`role:slave (of 127.0.0.1:${server.port})`);
    expect(findings[1]!.fix).toContain(`127.0.0.1:${server.port}`);
    const refused = await rejection(onReplica.tryAcquire('job', 'a', 5000));
    expect(refused.message).toContain('READONLY'); // what the warning says

    await replica.cli('config', 'set', 'replica-read-only', 'no');
    ({ findings } = await diagnoseStore(onReplica));
    expect(found({ findings })).toEqual([
      'redis.no-persistence unsafe',
      'redis.writable-replica unsafe',
    ]);
    expect(findings[1]!.observed).toContain('replica-read-only no');

    await replica.stop();
    await waitFor('the primary to lose its replica', async () =>
      (await server.cli('info', 'replication')).includes('connected_slaves:0'),
    );
    expect(found(await diagnoseStore(store))).toEqual([]);
  });

  it('CONFIG renamed away is redis.settings-unreadable, saying what to check; INFO still tells that AOF is off', async () => {
    const hidden = await RedisServer.start({ args: ['--rename-command', 'CONFIG', ''] });
    cleanup.push(() => hidden.stop());
    const onHidden = await openStore(`${hidden.url}?prefix=doctor:`);
    cleanup.push(() => onHidden.close());
    const { findings, checked } = await diagnoseStore(onHidden);
    expect(found({ findings })).toEqual([
      'redis.no-aof unsafe',
      'redis.settings-unreadable unknown',
    ]);
    expect(findings[0]!.observed).toBe(
      'appendonly no (INFO aof_enabled:0); the RDB save schedule could not be read',
    );
    expect(findings[1]!.observed).toMatch(/^CONFIG GET refused \(ERR unknown command/);
    expect(findings[1]!.fix).toContain('appendfsync always');
    expect(checked).toEqual(['INFO persistence', 'INFO replication', 'INFO memory']);
  });

  it('an ACL user without INFO and CONFIG gets only redis.settings-unreadable, naming both refusals', async () => {
    await server.cli(
      'acl',
      'setuser',
      'doc',
      'on',
      '>doc-pw',
      '~*',
      '&*',
      '+@all',
      '-info',
      '-config',
    );
    cleanup.push(() => server.cli('acl', 'deluser', 'doc'));
    const limited = await openStore(`redis://doc:doc-pw@127.0.0.1:${server.port}?prefix=doctor:`);
    cleanup.push(() => limited.close());
    const { findings, checked } = await diagnoseStore(limited);
    expect(found({ findings })).toEqual(['redis.settings-unreadable unknown']);
    expect(findings[0]!.observed).toMatch(
      /^INFO refused \(NOPERM .*\); CONFIG GET refused \(NOPERM /,
    );
    expect(findings[0]!.risk).toContain('whether AOF, eviction or replicas are on');
    expect(checked).toEqual([]);
  });

  it('shows no password in findings or errors; a paused server is STORE_UNAVAILABLE at the deadline, a stopped one at once, and a closed store too', async () => {
    const password = 'pw-s3cret-4711';
    const locked = await RedisServer.start({ args: ['--requirepass', password] });
    cleanup.push(() => locked.stop());
    const onLocked = await openStore(
      `redis://:${password}@127.0.0.1:${locked.port}?prefix=doctor:&commandTimeoutMs=1000`,
    );
    cleanup.push(() => onLocked.close());
    const diagnosis = await diagnoseStore(onLocked);
    expect(found(diagnosis)).toEqual(['redis.no-persistence unsafe']);
    expect(JSON.stringify(diagnosis)).not.toContain(password);

    locked.pause();
    try {
      const paused = await rejection(diagnoseStore(onLocked), 5000);
      expect(paused.code).toBe('STORE_UNAVAILABLE');
      expect(paused.message).toContain('no answer within 1000 ms');
      expect(paused.message).not.toContain(password);
    } finally {
      locked.resume();
    }
    await locked.stop();
    const stopped = await rejection(diagnoseStore(onLocked), 5000);
    expect(stopped.code).toBe('STORE_UNAVAILABLE');
    expect(stopped.message).toMatch(/^Redis diagnose failed: /);
    expect(stopped.message).not.toContain(password);

    await onLocked.close();
    const closed = await rejection(diagnoseStore(onLocked));
    expect(closed.code).toBe('STORE_UNAVAILABLE');
    expect(closed.message).toBe('diagnose failed: the store is closed');
  });

  it('a node-redis client reads the same', async () => {
    const client = createClient({ url: server.url });
    client.on('error', () => {});
    await client.connect();
    cleanup.push(async () => client.destroy());
    const onNode = await RedisStore.open(client, { prefix: 'doctor:' });
    await configSet('save', '60 1');
    const diagnosis = await diagnoseStore(onNode);
    expect(found(diagnosis)).toEqual(['redis.no-aof unsafe']);
    expect(diagnosis.findings[0]!.observed).toContain('save "60 1"');
  });

  it('on a Redis Cluster, every master is read and named, through ioredis and node-redis', async () => {
    const cluster = await RedisCluster.start();
    cleanup.push(() => cluster.stop());
    const [first, ...rest] = cluster.seeds;
    const onCluster = await openStore(`redis://${first}?cluster=${rest.join(',')}&prefix=doctor:`);
    cleanup.push(() => onCluster.close());
    const names = cluster.seeds.slice().sort();

    const all = await diagnoseStore(onCluster);
    expect(found(all)).toEqual(Array(3).fill('redis.no-persistence unsafe'));
    expect(all.findings.map((f) => f.observed).sort()).toEqual(
      names.map((name) => `${name}: appendonly no, save ""`),
    );
    expect(all.checked[0]).toMatch(/^every cluster master: /);
    expect(all.checked[0]!.slice('every cluster master: '.length).split(', ').sort()).toEqual(
      names,
    );

    await cluster.nodes[0]!.cli('config', 'set', 'appendonly', 'yes');
    const two = await diagnoseStore(onCluster);
    expect(two.findings.map((f) => f.observed.split(': ')[0]).sort()).toEqual(
      names.filter((name) => name !== cluster.seeds[0]),
    );

    const client = createCluster({
      rootNodes: cluster.seeds.map((seed) => ({ url: `redis://${seed}` })),
    });
    client.on('error', () => {});
    await client.connect();
    cleanup.push(async () => client.destroy());
    const onNodeCluster = await RedisStore.open(client, { prefix: 'doctor:' });
    const viaNode = await diagnoseStore(onNodeCluster);
    expect(viaNode.findings.map((f) => `${f.id} ${f.observed}`).sort()).toEqual(
      two.findings.map((f) => `${f.id} ${f.observed}`).sort(),
    );
  });
});
