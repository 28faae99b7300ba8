import type { RedisServer } from '../harness/redis-server.js';

/**
 * How many times the server has run each command (`INFO commandstats`): what a store really
 * sent, counted on the server. Commands a script runs are counted too, under their own names.
 */
export async function commandCalls(server: RedisServer): Promise<Map<string, number>> {
  const info = await server.cli('info', 'commandstats');
  const calls = new Map<string, number>();
  for (const [, name, count] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    calls.set(name!, Number(count));
  return calls;
}

/** Script calls (EVALSHA + EVAL) the server has run so far. */
export async function scriptCalls(server: RedisServer): Promise<number> {
  const calls = await commandCalls(server);
  return (calls.get('evalsha') ?? 0) + (calls.get('eval') ?? 0);
}

/** The server's own clock (`TIME`) in ms since the epoch. */
export async function serverMs(server: RedisServer): Promise<number> {
  const [seconds, micros] = (await server.cli('time')).split('\n').map(Number);
  return seconds! * 1000 + Math.floor(micros! / 1000);
}

/**
 * Runs `fn` and counts what the server ran meanwhile, by command (`INFO` itself left out): a
 * script call counts once under `evalsha` or `eval`, and each command it ran under its own name.
 */
export async function commandsDuring<T>(
  server: RedisServer,
  fn: () => Promise<T>,
): Promise<{ result: T; ran: Record<string, number> }> {
  const before = await commandCalls(server);
  const result = await fn();
  const ran: Record<string, number> = {};
  for (const [name, count] of await commandCalls(server)) {
    const delta = count - (before.get(name) ?? 0);
    if (delta > 0 && name !== 'info') ran[name] = delta;
  }
  return { result, ran };
}

/**
 * `commandsDuring` over several servers (one, or every master of a cluster), summed: what the
 * store sent for `fn` wherever it went. `INFO` and the drivers' own `CLUSTER` slot refreshes are
 * left out.
 */
export async function commandsOn<T>(
  servers: readonly RedisServer[],
  fn: () => Promise<T>,
): Promise<{ result: T; ran: Record<string, number> }> {
  const total = async (): Promise<Map<string, number>> => {
    const sum = new Map<string, number>();
    for (const calls of await Promise.all(servers.map(commandCalls)))
      for (const [name, count] of calls) sum.set(name, (sum.get(name) ?? 0) + count);
    return sum;
  };
  const before = await total();
  const result = await fn();
  const ran: Record<string, number> = {};
  for (const [name, count] of await total()) {
    const delta = count - (before.get(name) ?? 0);
    if (delta > 0 && name !== 'info' && !name.startsWith('cluster')) ran[name] = delta;
  }
  return { result, ran };
}
