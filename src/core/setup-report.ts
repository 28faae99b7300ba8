import { channel } from 'node:diagnostics_channel';
import { FINDING_IDS, type Diagnosis, type Finding } from './doctor.js';
import type { LeaseStore } from './store.js';

/** The diagnostics channel a store's setup findings go to (`LeaseholdChannel.storeFinding`). */
export const STORE_FINDING_CHANNEL = 'leasehold:store:finding';

/** What is published on `leasehold:store:finding`: one finding of `leasehold doctor`'s. */
export type StoreFindingMessage = Finding;

/** The part of a logger setup findings are written to (a pino logger or `console` fits). */
export interface SetupLogger {
  warn(fields: object, message: string): void;
  debug(fields: object, message: string): void;
  isLevelEnabled?(level: string): boolean;
}

function enabled(logger: SetupLogger, level: string): boolean {
  return logger.isLevelEnabled?.(level) ?? true;
}

const findingChannel = channel(STORE_FINDING_CHANNEL);

/** One diagnosis per store, shared by every client made on it. */
const diagnoses = new WeakMap<LeaseStore, Promise<Diagnosis | Error>>();
/** Who was told already, per store: each logger once, the channel once. */
const told = new WeakMap<LeaseStore, WeakSet<object>>();
const CHANNEL_TOLD = {};

/**
 * Finding ids left out everywhere: `LEASEHOLD_IGNORE_FINDINGS` (comma-separated), for a setup
 * that is known and accepted. An unknown id in it comes back as `problem`, which each client made
 * with a logger warns of.
 */
export function ignoredByEnvironment(): { ids: Set<string>; problem?: string } {
  const text = process.env.LEASEHOLD_IGNORE_FINDINGS?.trim();
  if (!text) return { ids: new Set() };
  const ids = text
    .split(',')
    .map((id) => id.trim())
    .filter(Boolean);
  const unknown = ids.filter((id) => !FINDING_IDS.has(id));
  const known = new Set(ids.filter((id) => FINDING_IDS.has(id)));
  if (unknown.length === 0) return { ids: known };
  return {
    ids: known,
    problem: `LEASEHOLD_IGNORE_FINDINGS: ignore names no finding a store reports: ${unknown.join(', ')}`,
  };
}

/**
 * Tells the `leasehold:store:finding` channel (every finding) and `logger` (the unsafe ones, at
 * `warn`) once per store what `leasehold doctor` would say of its setup; `ignore` leaves known ones
 * out. Runs in the background, and only when somebody listens (a logger, or a channel
 * subscriber): with neither, the store is not asked. A store that cannot say (no `diagnose`, or
 * a failed read) is noted at `debug`.
 */
export function reportStoreSetup(
  store: LeaseStore,
  logger: SetupLogger | undefined,
  ignore: ReadonlySet<string>,
): void {
  const seen = told.get(store) ?? new WeakSet<object>();
  told.set(store, seen);
  const toChannel = findingChannel.hasSubscribers && !seen.has(CHANNEL_TOLD);
  const toLogger = logger !== undefined && !seen.has(logger);
  if (!toChannel && !toLogger) return;
  if (toChannel) seen.add(CHANNEL_TOLD);
  if (toLogger) seen.add(logger);
  if (typeof store.diagnose !== 'function') return; // a custom store that cannot say
  let diagnosis = diagnoses.get(store);
  if (!diagnosis) {
    diagnosis = store.diagnose().catch((error: unknown) => toError(error));
    diagnoses.set(store, diagnosis);
  }
  void diagnosis.then((result) => {
    if (result instanceof Error) {
      if (toLogger && enabled(logger, 'debug'))
        logger.debug({ err: result.message }, 'store setup not checked');
      return;
    }
    for (const found of result.findings) {
      if (ignore.has(found.id)) continue;
      if (toChannel) findingChannel.publish({ ...found } satisfies StoreFindingMessage);
      if (!toLogger) continue;
      const { id, level, observed, risk, fix } = found;
      const fields = { finding: id, level, observed, risk, fix };
      if (level === 'unsafe' && enabled(logger, 'warn'))
        logger.warn(fields, `store setup can lose leases: ${id} (${observed}); fix: ${fix}`);
    }
  });
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
