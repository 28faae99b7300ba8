/**
 * What the demo tells each worker process it starts, as JSON in an environment variable: never on
 * the command line, where `ps` would show a store password to every user of the machine.
 */
export interface WorkerConfig {
  /** The worker's letter, also its owner id's suffix. */
  letter: string;
  /** The lease store URL every worker opens. */
  store: string;
  /** The fleet's group, unique per run, so runs sharing a store never mix. */
  group: string;
  /** The resources are `resourceNames(resourcePrefix, resourceCount)`. */
  resourcePrefix: string;
  resourceCount: number;
  ttlMs: number;
  heartbeatMs: number;
  reconcileMs: number;
  /** The downstream SQLite file the fenced writes go to. */
  downstream: string;
  /** Each lease's write loop waits a random time in this range before every write. */
  writeEveryMs: readonly [number, number];
}

export const CONFIG_ENV = 'LEASEHOLD_DEMO_WORKER';

export function encodeWorkerConfig(config: WorkerConfig): Record<string, string> {
  return { [CONFIG_ENV]: JSON.stringify(config) };
}

export function decodeWorkerConfig(env: NodeJS.ProcessEnv): WorkerConfig {
  const text = env[CONFIG_ENV];
  if (text === undefined)
    throw new Error(`${CONFIG_ENV} is not set: this worker is started by leasehold demo`);
  return JSON.parse(text) as WorkerConfig;
}

/** The owner id a worker's leases carry. */
export function ownerOf(letter: string): string {
  return `worker-${letter}`;
}
