import { ErrorCode, LeaseError } from '../../core/errors.js';

/**
 * How an acquire answers in the OK packet's insert id alone (see `acquire` in mysql-ops.ts):
 * `token × 2^CLOCK_BITS + code`, 0 when refused. `code` is where the server clock stood against
 * the caller's estimate of it (`code − WINDOW − 1` ms off), or 0 when it was further off than
 * `WINDOW` ms. Tokens stay exact: a safe integer times 2^10 still fits a signed BIGINT.
 */
export const CLOCK_BITS = 10;
/** The largest distance (ms) between the server clock and the caller's estimate the code can carry. */
export const WINDOW = 2 ** (CLOCK_BITS - 1) - 1;

/**
 * The server clock as this process estimates it: its own clock plus the offset the latest answer
 * showed. Each answer sets the offset outright (calls in flight together must not add up their
 * corrections).
 */
export class ServerClock {
  private offset = 0;

  /** The estimate, in ms since the epoch, for the moment our clock reads `local`. */
  at(local: number): number {
    return local + this.offset;
  }

  /** The server clock read `serverMs` during a call sent when our clock read `local`. */
  observe(serverMs: number, local: number): void {
    this.offset = serverMs - local;
  }
}

/** A granted acquire: its token, and the server's "now" when the answer could carry it. */
export interface Grant {
  readonly token: number;
  readonly now: number | undefined;
}

/** Reads an acquire's insert id (a number, or a string past 2^53), sent with `estimate`; `null` when refused. */
export function decodeGrant(insertId: unknown, estimate: number): Grant | null {
  const id = BigInt(typeof insertId === 'number' ? insertId : String(insertId));
  if (id === 0n) return null;
  const token = Number(id >> BigInt(CLOCK_BITS));
  if (!Number.isSafeInteger(token)) {
    throw new LeaseError(
      ErrorCode.STORE_UNAVAILABLE,
      `the server returned ${token} as token, not a safe integer`,
      { retryable: false },
    );
  }
  const code = Number(id & BigInt(2 ** CLOCK_BITS - 1));
  return { token, now: code === 0 ? undefined : estimate + code - WINDOW - 1 };
}
