import { freePort } from './process-tree.js';

/** How `startOnFreePort` starts each server it makes, and gives up on it. */
export interface FreePortStart<S> {
  /** Starts the server `make` answered and waits until it is ready; throws when it cannot. */
  readonly start: (server: S) => Promise<void>;
  /** Gets rid of a server whose start failed: its processes and, unless another try reuses it, its folder. */
  readonly discard: (server: S) => Promise<void> | void;
  /** How many servers to try, each on ports probed afresh. @default 3 */
  readonly attempts?: number;
  /**
   * Whether another server is worth trying after `error`: `false` throws it at once (once the
   * failed server is discarded). @default every error (a port is most often taken between the
   * probe and the bind, and a server says so in its own words)
   */
  readonly retryAfter?: (error: unknown) => boolean;
}

/**
 * Makes a server on a port that was free a moment ago (`make(port)`; one with more ports probes
 * the others with `freePort` itself) and starts it. The port can be taken between the probe and
 * the bind: a server that fails to start is discarded and a new one made on fresh ports, up to
 * `attempts` servers, and the last error thrown.
 */
export async function startOnFreePort<S>(
  make: (port: number) => S | Promise<S>,
  { start, discard, attempts = 3, retryAfter = () => true }: FreePortStart<S>,
): Promise<S> {
  let lastError: unknown;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const server = await make(await freePort());
    try {
      await start(server);
      return server;
    } catch (error) {
      lastError = error;
      await discard(server);
      if (!retryAfter(error)) break;
    }
  }
  throw lastError;
}
