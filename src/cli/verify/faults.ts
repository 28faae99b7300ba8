import { InvalidArgumentError } from 'commander';

/** Faults the nemesis injects while the run lasts. */
export const TIMED_FAULTS = ['kill', 'stop', 'pause', 'stall'] as const;
/** Faults on the store's server, injected only into a private server verify started itself. */
export const STORE_FAULTS = ['store-pause', 'store-restart'] as const;
/**
 * Faults on a replicated store in a lab (each member and each worker on a network host of its
 * own): the leader cut off from the other members, a holder cut off from every member, the
 * leader killed and started again, and on a primary with a replica, a failover to the replica.
 */
export const CLUSTER_FAULTS = [
  'partition-leader',
  'partition-holder',
  'kill-leader',
  'failover',
] as const;
/** Every fault name `--faults` accepts. */
export const FAULT_NAMES = [
  ...TIMED_FAULTS,
  'skew',
  'drift',
  ...STORE_FAULTS,
  ...CLUSTER_FAULTS,
] as const;
export type FaultName = (typeof FAULT_NAMES)[number];
export type StoreFault = (typeof STORE_FAULTS)[number];
export type ClusterFault = (typeof CLUSTER_FAULTS)[number];

export function isStoreFault(name: string): name is StoreFault {
  return (STORE_FAULTS as readonly string[]).includes(name);
}

export function isClusterFault(name: string): name is ClusterFault {
  return (CLUSTER_FAULTS as readonly string[]).includes(name);
}
export const DEFAULT_FAULTS = 'kill,stop,pause,stall,skew';

/** A commander parser for `--faults kill,pause,...`. */
export function parseFaults(text: string): FaultName[] {
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (names.length === 0) throw new InvalidArgumentError('name at least one fault');
  for (const name of names) {
    if (!(FAULT_NAMES as readonly string[]).includes(name))
      throw new InvalidArgumentError(`unknown fault "${name}"; known: ${FAULT_NAMES.join(', ')}`);
  }
  return [...new Set(names)] as FaultName[];
}
