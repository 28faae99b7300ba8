import { redact, urlPassword } from '../core/store-url.js';
import { isLeaseError } from '../index.js';
import { terminalSafe } from './escape.js';

/** An outcome the command reports as a failure without a `LeaseError` code (not found, not released). */
export class CliFailure extends Error {
  /** The command already printed its outcome (its `--json` document): no JSON error follows it. */
  readonly reported: boolean;

  constructor(
    message: string,
    readonly exitCode = 1,
    options: { reported?: boolean } = {},
  ) {
    super(message);
    this.name = 'CliFailure';
    this.reported = options.reported ?? false;
  }
}

export function print(line = ''): void {
  process.stdout.write(`${line}\n`);
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** The one line a failed command prints on stderr. */
export function errorLine(error: unknown): string {
  return `leasehold: ${terminalSafe(errorText(error))}`;
}

function errorText(error: unknown): string {
  if (isLeaseError(error)) return `${error.code}: ${error.message}`;
  if (error instanceof CliFailure) return error.message;
  return error instanceof Error ? error.message : String(error);
}

/**
 * Removes the password of a store URL from `text`, in case a driver echoed it in a message.
 * Messages leasehold writes itself already use the redacted URL; this is a second guard, and finds
 * the password of a malformed URL (misspelt scheme, unencoded `?` or `#` in the password) too.
 */
export function scrubPassword(text: string, url: string | undefined): string {
  if (url === undefined) return text;
  let out = text.split(url).join(redact(url));
  const password = urlPassword(url);
  if (!password) return out;
  out = out.split(password).join('***');
  try {
    const decoded = decodeURIComponent(password);
    if (decoded !== password) out = out.split(decoded).join('***');
  } catch {
    // not percent-encoded
  }
  return out;
}
