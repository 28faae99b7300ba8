import type {
  NodeRedisClient,
  NodeRedisNode,
  NodeRedisServer,
  NodeRedisSubscriber,
  RedisAdmin,
  RedisArg,
  RedisClient,
  RedisSubscriber,
  ScriptOptions,
} from './redis-driver.js';

/**
 * Whether `client` is node-redis rather than ioredis, by the command names each spells its own
 * way (node-redis `evalSha` and `hmGet`, ioredis `evalsha` and `hmget`): two copies of either
 * package, or a wrapper around one, are told apart as well as the package itself.
 */
export function isNodeRedis(client: RedisClient | NodeRedisClient): client is NodeRedisClient {
  const named = client as Partial<Record<'evalSha' | 'hmGet' | 'evalsha', unknown>>;
  return (
    typeof named.evalSha === 'function' &&
    typeof named.hmGet === 'function' &&
    typeof named.evalsha !== 'function'
  );
}

/**
 * The store's driver calls on a node-redis client: EVALSHA and EVAL with their keys and
 * arguments apart (numbers as text, as node-redis sends only strings), HMGET, INFO and CONFIG GET
 * (for `diagnose`; on a cluster, on each master through its node client), and a duplicated client
 * for `watch`. `quit` closes the client after its pending commands, `disconnect` at once.
 */
export function fromNodeRedis(client: NodeRedisClient): RedisClient {
  return {
    evalsha: (sha, numKeys, ...args) => client.evalSha(sha, scriptOptions(numKeys, args)),
    eval: (script, numKeys, ...args) => client.eval(script, scriptOptions(numKeys, args)),
    hmget: (key, ...fields) => client.hmGet(key, fields) as Promise<(string | null)[]>,
    duplicate: () => new NodeRedisSubscription(client.duplicate()),
    quit: () => client.close(),
    disconnect: () => client.destroy(),
    isCluster: Array.isArray(client.masters),
    ...adminOf(async () => client),
    nodes: () =>
      mastersOf(client).map((node) => ({
        ...adminOf(() => client.nodeClient!(node)),
        options: { host: node.host, port: node.port },
      })),
  };
}

/** `INFO` and `CONFIG GET`, as `RedisAdmin` spells them, on the client `connect` resolves to. */
function adminOf(connect: () => Promise<NodeRedisServer>): RedisAdmin {
  return {
    info: async (section) => String(await (await connect()).info!(section)),
    config: async (_get, parameter) => (await connect()).configGet!(parameter),
  };
}

/** A node-redis cluster's masters; none on a single client. */
function mastersOf(client: NodeRedisClient): NodeRedisNode[] {
  return Array.isArray(client.masters) ? (client.masters as NodeRedisNode[]) : [];
}

function scriptOptions(numKeys: number, args: RedisArg[]): ScriptOptions {
  const keys = new Array<string>(numKeys);
  for (let i = 0; i < numKeys; i++) keys[i] = String(args[i]);
  const rest = new Array<string>(args.length - numKeys);
  for (let i = numKeys; i < args.length; i++) rest[i - numKeys] = String(args[i]);
  return { keys, arguments: rest };
}

type MessageListener = (channel: string, message: string) => void;
type ErrorListener = (error: Error) => void;

/**
 * A duplicated node-redis client as the store's subscriber: connected on the first `subscribe`
 * (node-redis does not connect by itself), with its errors passed on (an `error` event without a
 * listener would throw) and its messages handed over as ioredis hands them, channel first.
 */
class NodeRedisSubscription implements RedisSubscriber {
  private readonly messageListeners = new Set<MessageListener>();
  private readonly errorListeners = new Set<ErrorListener>();
  private connected: Promise<unknown> | undefined;

  constructor(private readonly connection: NodeRedisSubscriber) {
    connection.on('error', (error) => {
      for (const listener of this.errorListeners) listener(error);
    });
  }

  async subscribe(channel: string): Promise<unknown> {
    this.connected ??= this.connection.connect();
    await this.connected;
    return this.connection.subscribe(channel, (message, from) => {
      for (const listener of this.messageListeners) listener(from, message);
    });
  }

  on(event: 'message', listener: MessageListener): this;
  on(event: 'error', listener: ErrorListener): this;
  on(event: 'message' | 'error', listener: MessageListener | ErrorListener): this {
    if (event === 'message') this.messageListeners.add(listener as MessageListener);
    else this.errorListeners.add(listener as ErrorListener);
    return this;
  }

  disconnect(): void {
    this.messageListeners.clear();
    try {
      this.connection.destroy();
    } catch {
      // never connected, or already gone: nothing to close
    }
  }
}
