import { afterAll, beforeAll, describe, it } from 'vitest';
import { MemoryStore, SqliteStore, type LeaseStore } from '../../src/index.js';
import { describeServer } from '../harness/describe-server.js';
import { tempDir } from '../harness/processes.js';
import { freshNamespace, type OpenOptions, type StoreFactory } from './factory.js';
import { dynamodbFactory } from './factories/dynamodb.js';
import { etcdFactory } from './factories/etcd.js';
import { mysqlFactory } from './factories/mysql.js';
import { postgresFactory } from './factories/postgres.js';
import { redisFactory } from './factories/redis.js';
import { redisClusterFactory } from './factories/redis-cluster.js';
import { redisNodeFactory } from './factories/redis-node.js';
import { s3Factory } from './factories/s3.js';
import { natsFactory } from './factories/nats.js';
import { zookeeperFactory } from './factories/zookeeper.js';

function memoryFactory(): StoreFactory {
  return {
    name: 'memory',
    durable: false,
    unavailable: () => null,
    setup: async () => {},
    open: async () => new MemoryStore(),
    teardown: async () => {},
  };
}

function sqliteFactory(): StoreFactory {
  let dir: ReturnType<typeof tempDir> | undefined;
  return {
    name: 'sqlite',
    durable: true,
    unavailable: () => null,
    setup: async () => {
      dir = tempDir('leasehold-sqlite-');
    },
    open: async (namespace) => SqliteStore.open(`${dir!.path}/leases.db`, { table: namespace }),
    watchEvents: ['released'],
    teardown: async () => dir?.cleanup(),
  };
}

/** Every store the suite runs against. Adapters register their factory here. */
export const allStores: StoreFactory[] = [
  memoryFactory(),
  sqliteFactory(),
  postgresFactory(),
  mysqlFactory(),
  redisFactory(),
  redisClusterFactory(),
  redisNodeFactory(),
  dynamodbFactory(),
  etcdFactory(),
  s3Factory(),
  natsFactory(),
  zookeeperFactory(),
];

/** `LEASEHOLD_STORES=sqlite,postgres` narrows the run to those stores. */
export function selectedStores(): StoreFactory[] {
  const filter = process.env.LEASEHOLD_STORES?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return filter?.length ? allStores.filter((f) => filter.includes(f.name)) : allStores;
}

export interface StoreContext {
  readonly factory: StoreFactory;
  /** A TTL short enough to wait out in a test, yet one the store expires promptly. */
  readonly shortTtl: number;
  /** A store on a fresh namespace, closed after the test file. */
  open(options?: OpenOptions): Promise<LeaseStore>;
  /** A second store over the same namespace as `store` (for reopen and multi-handle tests). */
  reopen(store: LeaseStore, options?: OpenOptions): Promise<LeaseStore>;
}

/**
 * Servers started and not yet taken by a store block. The blocks run one after another, and each
 * would otherwise start its server only when it begins, one at a time, while the machine's other
 * core waited: the first block that finds its server not started starts the server of every store
 * the file's topics registered at once, and each block takes its own (a file with two topics starts
 * them all again for the second) and stops it when done.
 */
const started = new Map<StoreFactory, Promise<void>>();
/** The stores some topic of this file registered a block for. */
const registered = new Set<StoreFactory>();
function setUp(factory: StoreFactory): Promise<void> {
  if (!started.has(factory)) {
    for (const f of registered) {
      if (f.unavailable() !== null || started.has(f)) continue;
      const setup = f.setup();
      setup.catch(() => {}); // reported by the block that takes it
      started.set(f, setup);
    }
  }
  const setup = started.get(factory)!;
  started.delete(factory);
  return setup;
}

// A server started for a block whose tests were all filtered out is stopped with the file.
afterAll(async () => {
  for (const [factory, setup] of started) {
    await setup.catch(() => {});
    await factory.teardown();
  }
});

/**
 * Registers `body` once per selected store (of those `only` accepts: a topic about what some
 * stores declare, such as a watch or fault controls). A store whose server cannot start fails in
 * CI and is skipped with a loud line elsewhere, never silently passed.
 */
export function describeStores(
  topic: string,
  body: (ctx: StoreContext) => void,
  only: (factory: StoreFactory) => boolean = () => true,
): void {
  const factories = selectedStores().filter(only);
  // A topic no selected setup offers (LEASEHOLD_STORES=s3 and the watch topic) says so, skipped,
  // rather than leave a file without tests, which vitest counts as a failure.
  if (factories.length === 0) {
    describe.skip(`${topic}: no selected setup offers it`, () => {
      it.skip('runs on the setups that offer it', () => {});
    });
  }
  for (const factory of factories) {
    registered.add(factory);
    const title = `${topic} [${factory.name}]`;
    describeServer(title, factory.unavailable(), () => {
      const opened: LeaseStore[] = [];
      const namespaces = new Map<LeaseStore, string>();
      beforeAll(() => setUp(factory));
      afterAll(async () => {
        await Promise.allSettled(opened.map((s) => s.close()));
        await factory.teardown();
      });
      const track = (store: LeaseStore, ns: string): LeaseStore => {
        opened.push(store);
        namespaces.set(store, ns);
        return store;
      };
      body({
        factory,
        shortTtl: factory.shortTtlMs ?? 120,
        open: async (options) => {
          const ns = freshNamespace();
          return track(await factory.open(ns, options), ns);
        },
        reopen: async (store, options) => {
          const ns = namespaces.get(store);
          if (!ns) throw new Error('reopen() takes a store from open()');
          return track(await factory.open(ns, options), ns);
        },
      });
    });
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Long enough for a lease of `ttlMs` to count as expired to a contender on `store`. */
export function expiryWait(store: LeaseStore, ttlMs: number): number {
  return ttlMs + store.maxClockSkewMs + (store.expiryLagMs ?? 0) + 60;
}
