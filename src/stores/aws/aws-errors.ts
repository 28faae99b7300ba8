import { ErrorCode, LeaseError } from '../../core/errors.js';

/**
 * The SDK's "region is missing" as a permanent `STORE_UNAVAILABLE` saying where to set one
 * (`prefix` says what failed), or `undefined` for any other error.
 */
export function missingRegion(error: unknown, prefix: string): LeaseError | undefined {
  const message = error instanceof Error ? error.message : String(error);
  if (!/region is missing/i.test(message)) return undefined;
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `${prefix}: no AWS region: add ?region= to the store URL or set AWS_REGION`,
    { cause: error, retryable: false },
  );
}

/**
 * Whether the SDK sent the request more than once (it retries timeouts, dropped connections and
 * 5xx by itself): a refused condition may then be the work of its own earlier attempt, which
 * landed although its answer was lost.
 */
export function wasRetried(error: unknown): boolean {
  const attempts = (error as { $metadata?: { attempts?: unknown } } | null)?.$metadata?.attempts;
  return typeof attempts === 'number' && attempts > 1;
}
