import { CallDeadlines } from '../../core/call-deadlines.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import { Coalescer, type Transition } from './redis-coalesce.js';
import {
  driverBounds,
  noAnswer,
  runScript,
  sendScript,
  withDeadline,
  type RedisArg,
  type RedisClient,
} from './redis-driver.js';
import type { RedisKeys } from './redis-keys.js';
import { LAYOUT, type Script } from './redis-ops.js';

/**
 * How a call reaches the server: after the namespace's layout is known to match, within the
 * command deadline (the driver's own where it bounds every command as tightly, else one kept by
 * `deadlines`, one timer for all calls), and for single-lease transitions asked while another
 * script call is on the wire, grouped with the others (see `Coalescer`).
 */
export class RedisCalls {
  /** The layout matched: calls go out at once. */
  layoutReady = false;
  private layoutChecked: Promise<void> | undefined;
  private readonly deadlines: CallDeadlines;
  private readonly coalescer: Coalescer;
  /** Script calls of this store on the wire now (single-lease ones and coalesced ones). */
  private onWire = 0;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    private readonly commandTimeoutMs: number,
  ) {
    const ms = commandTimeoutMs;
    this.deadlines = new CallDeadlines(ms, (operation) => noAnswer(operation, ms));
    this.coalescer = new Coalescer(client, keys, (delta) => (this.onWire += delta));
  }

  /** Runs `fn` once the layout is known to match, within the command deadline. */
  call<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    const ms = this.commandTimeoutMs;
    if (!this.layoutReady) return withDeadline(this.checkLayout().then(fn), ms, operation);
    if (driverBounds(this.client, ms)) return fn();
    return this.deadlines.bound<T>(operation, (resolve, reject) => {
      fn().then(resolve, reject);
    });
  }

  /** One script call, its reply turned into the result by `reply`, with as few promises as it takes. */
  send<T>(
    operation: string,
    script: Script,
    keys: string[],
    args: RedisArg[],
    reply: (value: unknown) => T,
  ): Promise<T> {
    const { client } = this;
    if (!this.layoutReady || driverBounds(client, this.commandTimeoutMs)) {
      return this.call(operation, () => runScript(client, script, keys, args, reply));
    }
    return this.deadlines.bound<T>(operation, (resolve, reject) => {
      const answer = replying(reply, resolve, reject);
      this.onWire++;
      sendScript(
        client,
        script,
        keys,
        args,
        (value) => {
          this.onWire--;
          answer(value);
        },
        (error) => {
          this.onWire--;
          reject(error);
        },
      );
    });
  }

  /**
   * Whether a single-lease transition should wait for the next turn and go with the others asked
   * meanwhile (see `Coalescer`): only while another script call of this store is on the wire, and
   * only where the store keeps the deadlines itself.
   */
  coalescing(): boolean {
    return this.onWire > 0 && this.layoutReady && !driverBounds(this.client, this.commandTimeoutMs);
  }

  /** A transition sent with the others asked in this turn, within the command deadline. */
  together<T>(operation: string, transition: Transition, reply: (value: unknown) => T): Promise<T> {
    return this.deadlines.bound<T>(operation, (resolve, reject) => {
      this.coalescer.push(transition, replying(reply, resolve, reject), reject);
    });
  }

  /** `fn` once the namespace's layout is known (key placement depends on it), the check within the command deadline. */
  afterLayout<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    return withDeadline(this.checkLayout(), this.commandTimeoutMs, operation).then(fn);
  }

  /** Refuses a namespace laid out by stores with another shard count (they would not see each other's leases). */
  checkLayout(): Promise<void> {
    this.layoutChecked ??= (async () => {
      const stored = await withDeadline(
        runScript(this.client, LAYOUT, [this.keys.meta], [this.keys.layout]),
        this.commandTimeoutMs,
        'open',
      );
      if (this.keys.adopt(stored)) {
        this.layoutReady = true;
        return;
      }
      throw new LeaseError(
        ErrorCode.STORE_UNAVAILABLE,
        `Redis key prefix "${this.keys.prefix}" is laid out as "${String(stored)}" but this store uses "${this.keys.layout}": open it with the same shards, or use another prefix`,
        { retryable: false },
      );
    })();
    this.layoutChecked.catch(() => {
      this.layoutChecked = undefined; // a connection failure is retried on the next call
    });
    return this.layoutChecked;
  }
}

/** Settles a call with its reply turned into the result, or with the error turning it threw. */
function replying<T>(
  reply: (value: unknown) => T,
  resolve: (value: T) => void,
  reject: (error: unknown) => void,
): (value: unknown) => void {
  return (value) => {
    try {
      resolve(reply(value));
    } catch (error) {
      reject(error);
    }
  };
}
