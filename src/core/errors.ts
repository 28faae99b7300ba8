/** Every error leasehold throws or aborts a signal with carries one of these codes. */
export const ErrorCode = {
  /** A caller passed a value leasehold cannot accept; the message names the field. */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  /** The lease is held by someone else and the wait ran out. */
  LEASE_UNAVAILABLE: 'LEASE_UNAVAILABLE',
  /** The holder can no longer be sure it owns the lease: it was taken, or its deadline passed. */
  LEASE_LOST: 'LEASE_LOST',
  /** The holder gave the lease up (release, close or shutdown). */
  LEASE_RELEASED: 'LEASE_RELEASED',
  /** The store could not be reached or failed; the call may be retried. */
  STORE_UNAVAILABLE: 'STORE_UNAVAILABLE',
  /** A store URL could not be understood. */
  STORE_URL_INVALID: 'STORE_URL_INVALID',
  /** The driver package of a store is not installed. */
  DRIVER_MISSING: 'DRIVER_MISSING',
  /** The client or manager was closed; make a new one. */
  CLIENT_CLOSED: 'CLIENT_CLOSED',
  /** The store cannot do what was asked (for instance `watch` on a store without notifications). */
  NOT_SUPPORTED: 'NOT_SUPPORTED',
  /**
   * The store's server lacks a guarantee leases depend on (for instance an S3 endpoint that ignores
   * conditional writes); the message names the missing guarantee. Not retryable.
   */
  STORE_UNSAFE: 'STORE_UNSAFE',
  /**
   * A lease record in the store is not one leasehold could have written (a field missing or of the
   * wrong type, a token that is not a positive safe integer, an owner too long): written by hand or
   * by another program. The record is never treated as free. Not retryable.
   */
  RECORD_INVALID: 'RECORD_INVALID',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** What a `LeaseError` carries besides its code and message. */
export interface LeaseErrorOptions {
  /** The underlying error (a driver's, or the signal reason), forwarded as `Error.cause`. */
  cause?: unknown;
  /** Whether repeating the same call may succeed. Defaults to true for `STORE_UNAVAILABLE` only. */
  retryable?: boolean;
  /** The resource the error is about, when there is one. */
  resource?: string;
}

/** The one error class leasehold throws, and the reason it aborts a lease's signal with. */
export class LeaseError extends Error {
  /** Always `'LeaseError'`. */
  override readonly name = 'LeaseError';
  /** What went wrong, one of {@link ErrorCode}. */
  readonly code: ErrorCode;
  /** Whether repeating the same call may succeed. */
  readonly retryable: boolean;
  /** The resource the error is about, or `undefined` when there is none. */
  readonly resource: string | undefined;

  /**
   * Makes an error with a code; `retryable` defaults to true for `STORE_UNAVAILABLE` only.
   *
   * @param code - What went wrong.
   * @param message - A human-readable description.
   * @param options - `cause`, `retryable` and `resource`.
   */
  constructor(code: ErrorCode, message: string, options: LeaseErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? code === ErrorCode.STORE_UNAVAILABLE;
    this.resource = options.resource;
  }
}

/** Whether `error` is a {@link LeaseError}, and, when `code` is given, one with that code. */
export function isLeaseError(error: unknown, code?: ErrorCode): error is LeaseError {
  return error instanceof LeaseError && (code === undefined || error.code === code);
}

export function invalidArgument(field: string, problem: string): LeaseError {
  return new LeaseError(ErrorCode.INVALID_ARGUMENT, `${field} ${problem}`);
}
