import { invalidArgument } from './errors.js';
import { describe } from './options.js';
import { redact } from './store-url.js';

/**
 * Where leasehold writes its logs: any object with pino's `debug`/`info`/`warn`/`error` methods,
 * each called as `(fields, message)`. A pino logger (or a child of one) fits as is, and so does
 * `console`. When it has pino's `isLevelEnabled`, nothing is built for a disabled level.
 */
export interface LeaseholdLogger {
  /** Routine lease life: acquired, released, handed off, taken over. */
  debug(fields: object, message: string): void;
  /** Fleet life: a manager started or stopped, the membership changed. */
  info(fields: object, message: string): void;
  /** Trouble that leasehold handles: a lease at risk or lost, a store error, a failed release or reconcile. */
  warn(fields: object, message: string): void;
  /** Trouble in the application: work started for a lease threw. */
  error(fields: object, message: string): void;
  /** Whether `level` is logged (pino's method); when absent, every level is. */
  isLevelEnabled?(level: string): boolean;
}

/** The levels leasehold logs at. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

/** Checks a `logger` option (`undefined` is none); throws `INVALID_ARGUMENT` naming the missing method. */
export function checkLogger(logger: unknown): LeaseholdLogger | undefined {
  if (logger === undefined) return undefined;
  if ((typeof logger !== 'object' && typeof logger !== 'function') || logger === null)
    throw invalidArgument(
      'logger',
      `must be an object such as a pino logger, got ${describe(logger)}`,
    );
  for (const level of LEVELS) {
    if (typeof (logger as Record<string, unknown>)[level] !== 'function')
      throw invalidArgument(
        'logger',
        `must have a ${level}(fields, message) method (as pino and console do)`,
      );
  }
  return logger as LeaseholdLogger;
}

/** Whether `logger` would write at `level`: nothing is built for a log nobody reads. */
export function logs(
  logger: LeaseholdLogger | undefined,
  level: LogLevel,
): logger is LeaseholdLogger {
  if (!logger) return false;
  if (typeof logger.isLevelEnabled !== 'function') return true;
  return logger.isLevelEnabled(level);
}

/** An error's message for a log or a channel, with any URL password hidden; a value without one as a string. */
export function errorText(error: unknown): string {
  const message = (error as { message?: unknown } | null | undefined)?.message;
  return hideUrlSecrets(typeof message === 'string' ? message : String(error));
}

/** Every `scheme://…` URL in `text` with its password (and secret parameters) hidden. */
export function hideUrlSecrets(text: string): string {
  return text.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi, (url) => redact(url));
}

/** The code of a `LeaseError` (or any error with a string `code`), else `UNKNOWN`. */
export function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : 'UNKNOWN';
}
