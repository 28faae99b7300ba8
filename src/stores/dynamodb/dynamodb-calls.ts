import { withDeadline } from '../../core/deadline.js';
import { ErrorCode, LeaseError } from '../../core/errors.js';
import { byWireElseSdk, fromSdkConfig, type Undici, type WireTarget } from '../aws/aws-wire.js';
import {
  attemptTimeoutMs,
  type DynamodbClient,
  type DynamodbCommand,
  type DynamodbModule,
} from './dynamodb-driver.js';
import { SIGNATURE_REFUSED } from './dynamodb-errors.js';
import type { ResolvedDynamodbOptions } from './dynamodb-options.js';
import type { TableTarget } from './dynamodb-table.js';
import { DynamodbWire, type WireOperation } from './dynamodb-wire.js';

/**
 * How a call reaches DynamoDB: through the SDK, or for the hot calls by the wire where the store
 * made its client (see `useWire`), each within `requestTimeoutMs`.
 */
export class DynamodbCalls {
  /** The hot calls' path where the store made its client (see `useWire`). */
  private wire: DynamodbWire | undefined;
  /** Set once the store went back to the SDK for good, or closed. */
  private wireOff = false;

  constructor(
    private readonly client: DynamodbClient,
    readonly sdk: DynamodbModule,
    private readonly options: ResolvedDynamodbOptions,
    /** Where the table is, for messages: ` at ENDPOINT`, ` in REGION` or ''. */
    readonly where: string,
    private readonly ownsClient: boolean,
  ) {}

  get table(): string {
    return this.options.table;
  }

  /**
   * Sends the hot calls by the wire to `target` from now on (a changed target replaces the wire),
   * unless the store went back to the SDK or is closed.
   */
  useWire(target: WireTarget, setup: { undici: Undici; connectTimeoutMs: number }): void {
    const shared = fromSdkConfig(this.client);
    if (this.wireOff || shared === undefined) return;
    this.wire?.destroy();
    this.wire = new DynamodbWire(target, {
      ...shared,
      maxSockets: this.options.concurrency,
      attemptTimeoutMs: attemptTimeoutMs(this.options.requestTimeoutMs),
      maxAttempts: 3,
      ...setup,
    });
  }

  /** Drops the wire for good and destroys the client where the store made it. */
  close(): void {
    this.wire?.destroy();
    this.wire = undefined;
    this.wireOff = true;
    if (this.ownsClient) (this.client as { destroy?: () => void }).destroy?.();
  }

  /**
   * One `UpdateItem` or `GetItem` within `requestTimeoutMs`: by the wire where the store has one,
   * else through the SDK. A signature the endpoint calls malformed (and only that) sends the call
   * again through the SDK, which takes the wire away for good unless the SDK's signature is refused
   * too (`byWireElseSdk`).
   */
  async item(operation: string, name: WireOperation, input: object): Promise<unknown> {
    const wire = this.wire;
    const Command = name === 'UpdateItem' ? this.sdk.UpdateItemCommand : this.sdk.GetItemCommand;
    if (wire === undefined) return this.send(operation, new Command(input));
    return byWireElseSdk(
      SIGNATURE_REFUSED,
      () => this.bounded(operation, wire.send(name, input)),
      () => this.send(operation, new Command(input)),
      () => {
        if (this.wire !== wire) return;
        this.wire = undefined;
        this.wireOff = true;
        wire.destroy();
      },
    );
  }

  /**
   * One SDK call within `requestTimeoutMs`, the SDK's retries included: at the deadline it fails
   * with a retryable `STORE_UNAVAILABLE`, even if the SDK would wait on. On a client this store
   * made, the SDK's own attempt timeouts (a third of `requestTimeoutMs` each, three attempts) end
   * its call about then too, so the call is not also aborted: an abort signal costs more than
   * building and checking the request (its listeners are set up through every layer of the SDK).
   * A client you made keeps whatever timeouts you gave it, so its calls are aborted at the
   * deadline. Either way a write whose answer did not come may still land.
   */
  send(operation: string, command: DynamodbCommand): Promise<unknown> {
    const controller = this.ownsClient ? undefined : new AbortController();
    const call = controller
      ? this.client.send(command, { abortSignal: controller.signal })
      : this.client.send(command);
    return this.bounded(operation, call, controller);
  }

  /** `call` within `requestTimeoutMs`, `controller` aborted at the deadline. */
  private bounded(
    operation: string,
    call: Promise<unknown>,
    controller?: AbortController,
  ): Promise<unknown> {
    const ms = this.options.requestTimeoutMs;
    return withDeadline(call, ms, () => {
      controller?.abort();
      return new LeaseError(
        ErrorCode.STORE_UNAVAILABLE,
        `DynamoDB ${operation} on table "${this.table}"${this.where} failed: no answer within ${ms} ms (is the endpoint paused or unreachable?)`,
      );
    });
  }

  /** What `ensureTable` and the doctor send through. */
  tableTarget(): TableTarget {
    return {
      sdk: this.sdk,
      send: (operation: string, command: DynamodbCommand) => this.send(operation, command),
      table: this.table,
      where: this.where,
    };
  }
}
