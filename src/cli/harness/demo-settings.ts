/** What `leasehold demo` was asked for, from its flags. */
export interface DemoFlags {
  workers: number;
  resources: number;
  /** `--ttl`, when given. */
  ttlMs?: number;
  quick: boolean;
}

/** Every number the run uses, derived once from the flags. */
export interface DemoSettings {
  workers: number;
  resources: number;
  ttlMs: number;
  heartbeatMs: number;
  reconcileMs: number;
  /** How long the third fault keeps its victim stopped: twice the TTL. */
  pauseMs: number;
  /** The longest the victim stays stopped while peers have not yet taken over and written. */
  maxPauseMs: number;
  /** Ownership must stay unchanged this long before the fleet counts as settled. */
  quietMs: number;
  /** The most a phase waits for the fleet to settle before it is reported as not recovered. */
  settleTimeoutMs: number;
  readyTimeoutMs: number;
  writeEveryMs: readonly [number, number];
  quick: boolean;
}

export const DEMO_LIMITS = Object.freeze({
  minWorkers: 4,
  maxWorkers: 16,
  maxResources: 512,
  minTtlMs: 500,
  maxTtlMs: 60_000,
});

export function demoSettings(flags: DemoFlags): DemoSettings {
  const ttlMs = flags.ttlMs ?? (flags.quick ? 1000 : 2000);
  return {
    workers: flags.workers,
    resources: flags.resources,
    ttlMs,
    heartbeatMs: Math.floor(ttlMs / 4),
    reconcileMs: Math.round(ttlMs / 2),
    pauseMs: 2 * ttlMs,
    maxPauseMs: 5 * ttlMs,
    quietMs: flags.quick
      ? Math.max(250, Math.round(ttlMs / 4))
      : Math.max(300, Math.round(ttlMs / 2)),
    settleTimeoutMs: 6 * ttlMs + 5000,
    readyTimeoutMs: 20_000,
    writeEveryMs: [100, 200],
    quick: flags.quick,
  };
}

/** Worker letters: A, B, C, ... */
export function letter(i: number): string {
  return String.fromCharCode(65 + i);
}

/** `r00` ... `r31`, under a prefix unique to the run. */
export function resourceNames(prefix: string, count: number): string[] {
  const width = String(count - 1).length;
  return Array.from({ length: count }, (_, i) => `${prefix}r${String(i).padStart(width, '0')}`);
}
