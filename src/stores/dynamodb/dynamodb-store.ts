import { stripUndefined } from '../../core/options.js';
import { withDeadline } from '../../core/deadline.js';
import type { Diagnosis } from '../../core/doctor.js';
import { ErrorCode, invalidArgument, LeaseError } from '../../core/errors.js';
import type { Lease, LeaseRecord, LeaseRef } from '../../core/lease.js';
import { sameData, withData, type LeaseData } from '../../core/lease-data.js';
import { invalidRecord } from '../../core/record-check.js';
import { parseStoreUrl } from '../../core/store-url.js';
import {
  compareResources,
  StoreBase,
  type AcquireOutcome,
  type StoreCapabilities,
} from '../../core/store.js';
import { runInOrder } from '../../core/run-in-order.js';
import {
  attemptTimeoutMs,
  createClient,
  sdkOf,
  type DynamodbClient,
  type DynamodbCommand,
  type DynamodbModule,
  type DynamodbSdkOption,
  type Item,
} from './dynamodb-driver.js';
import { diagnoseDynamodb } from './dynamodb-doctor.js';
import {
  conditionItem,
  isConditionFailed,
  mapDynamodbError,
  SIGNATURE_REFUSED,
  wasRetried,
} from './dynamodb-errors.js';
import {
  resolveConnectOptions,
  resolveDynamodbOptions,
  type DynamodbConnectOptions,
  type DynamodbStoreOptions,
  type ResolvedDynamodbOptions,
} from './dynamodb-options.js';
import {
  acquireRequest,
  describeTableRequest,
  getRequest,
  releaseRequest,
  renewRequest,
  renewWithDataRequest,
  scanFloor,
  scanRequest,
  writeDataRequest,
} from './dynamodb-ops.js';
import { toRecord } from './dynamodb-record.js';
import { ensureTable } from './dynamodb-table.js';
import {
  byWireElseSdk,
  captureTarget,
  fromSdkConfig,
  loadUndici,
  sameTarget,
  type Undici,
  type WireTarget,
} from '../aws/aws-wire.js';
import { DynamodbWire, type WireOperation } from './dynamodb-wire.js';
import { redactEndpoint } from '../../core/store-url.js';
import { parseDynamodbUrl, type DynamodbTarget } from './dynamodb-url.js';

/**
 * Leases in a DynamoDB table (partition key `resource`, String; no sort key), one item per
 * resource. Every transition is one conditional `UpdateItem`, so one round trip; a failed
 * condition is the answer "held by someone else" / "no longer yours", never an error.
 *
 * DynamoDB cannot read a clock inside a condition, so expiry is judged on the callers' clocks
 * (`capabilities.clock` is `'local'`): a contender takes a lease only when
 * `expiresAt + maxClockSkewMs < now`, and a holder stops believing `maxClockSkewMs` early.
 *
 * Items are never deleted, and DynamoDB's TTL must not be enabled on the table: TTL deletes an
 * expired item, and the next acquire would then start the resource's fencing token again at 1,
 * below tokens a downstream fence has already seen; the new holder's writes would be refused
 * and a paused ex-holder's higher token would still pass. A released item stays with `owner`
 * `''`, `expiresAt` `0` and its token (a few dozen bytes per resource ever leased).
 *
 * The SDK retries timeouts and dropped connections itself, within `requestTimeoutMs`. A renew
 * sent twice succeeds twice (it compares owner and token, nothing that the first one changed);
 * an acquire or release whose earlier attempt landed fails its condition on the retry and reads
 * the record back once to recognise its own write (an acquire takes it from the failed condition
 * instead where the endpoint returns it, as DynamoDB does: then a refused acquire also reports
 * the record that stood in the way as `holder`; dynalite does not, so there it has none).
 *
 * Lease data (`capabilities.data`) is one more attribute, `data` (see `dynamodb-ops.ts`): every
 * grant gets it back in its own update (`ALL_NEW`), `writeData` and a renew or release carrying
 * data are one conditional update on owner and token, and a renew or release without data leaves
 * the attribute out of the request. Items written before lease data existed simply lack it.
 *
 * `acquireMany` / `renewMany` / `releaseMany` are one update per resource, up to `concurrency` in
 * flight (no transaction: one failed condition would fail them all). `list` is a `Scan` of the
 * whole table, sorted here, on every call, paging with `after` included: right for an admin
 * command or a dashboard, not for a hot path.
 *
 * On a client the store made from a URL, `UpdateItem` and `GetItem` go by `DynamodbWire` (see
 * dynamodb-wire.ts and the `fastPath` option): the same requests, signed here for the endpoint,
 * region and credentials the SDK resolved for the store's first call. Should the endpoint refuse
 * that signature as malformed while the SDK's is accepted, the store goes back to the SDK for
 * good: the call is sent again through it (a refused request wrote nothing).
 */
export class DynamodbStore extends StoreBase {
  readonly capabilities: StoreCapabilities = Object.freeze({
    clock: 'local',
    batch: false,
    watch: false,
    atomicGroupMax: 0,
    data: true,
  });
  readonly maxClockSkewMs: number;
  private readonly options: ResolvedDynamodbOptions;
  /** The hot calls' path where the store made its client (see `useWire`). */
  private wire: DynamodbWire | undefined;
  /** Set once the store went back to the SDK for good, or closed. */
  private wireOff = false;

  /**
   * Opens a `dynamodb://TABLE?region=&endpoint=…` URL (the store makes a `DynamoDBClient` and
   * destroys it on `close()`), or uses a `DynamoDBClient` you made (it stays yours; pass
   * `options.table`). Checks the table with one `DescribeTable`, creating it when
   * `createTable` is set. `options` win over the URL's parameters.
   */
  static async open(
    target: string | DynamodbClient,
    options: DynamodbStoreOptions & DynamodbConnectOptions & DynamodbSdkOption = {},
  ): Promise<DynamodbStore> {
    if (typeof target === 'string') {
      const url = parseStoreUrl(target);
      if (url.scheme !== 'dynamodb')
        throw new LeaseError(
          ErrorCode.STORE_URL_INVALID,
          `expected a dynamodb://TABLE URL, got ${redactEndpoint(url.redacted)}`,
        );
      return DynamodbStore.connect(parseDynamodbUrl(url), options);
    }
    if (typeof (target as Partial<DynamodbClient> | null)?.send !== 'function')
      throw invalidArgument('target', 'must be a dynamodb:// URL or a DynamoDBClient');
    const { region, endpoint, connectTimeoutMs, sdk, ...storeOptions } = options;
    if (region !== undefined || endpoint !== undefined || connectTimeoutMs !== undefined)
      throw invalidArgument(
        'options',
        'region, endpoint and connectTimeoutMs belong on your DynamoDBClient, not the store',
      );
    const resolved = resolveDynamodbOptions(storeOptions);
    return DynamodbStore.start(target, await sdkOf(sdk), resolved, '', false);
  }

  /** @internal Opens what a parsed URL names; `options` override its parameters. */
  static async connect(
    target: DynamodbTarget,
    options: DynamodbStoreOptions & DynamodbConnectOptions & DynamodbSdkOption = {},
  ): Promise<DynamodbStore> {
    const defined = stripUndefined(options);
    const resolved = resolveDynamodbOptions({ ...target.store, ...defined });
    const connect = resolveConnectOptions({ ...target.connect, ...defined });
    const sdk = await sdkOf(options.sdk);
    const client = createClient(sdk, connect, resolved.requestTimeoutMs);
    let sentTo: WireTarget | undefined;
    let store: DynamodbStore | undefined;
    const wire = resolved.fastPath
      ? { undici: await loadUndici(), connectTimeoutMs: connect.connectTimeoutMs }
      : undefined;
    if (wire) {
      captureTarget(client, (seen) => {
        if (sameTarget(seen, sentTo)) return;
        sentTo = seen;
        store?.useWire(seen, wire);
      });
    }
    const where = connect.endpoint
      ? ` at ${redactEndpoint(connect.endpoint)}`
      : connect.region
        ? ` in ${connect.region}`
        : '';
    return DynamodbStore.start(client, sdk, resolved, where, true, (made) => {
      store = made; // later targets go to it
      if (sentTo && wire) made.useWire(sentTo, wire);
    });
  }

  private static async start(
    client: DynamodbClient,
    sdk: DynamodbModule,
    options: ResolvedDynamodbOptions,
    where: string,
    ownsClient: boolean,
    onMade?: (store: DynamodbStore) => void,
  ): Promise<DynamodbStore> {
    const store = new DynamodbStore(client, sdk, options, where, ownsClient);
    try {
      await ensureTable(store.tableTarget(), options.createTable);
      onMade?.(store);
    } catch (error) {
      await store.close().catch(() => {});
      throw store.mapError(error, 'open');
    }
    return store;
  }

  private constructor(
    private readonly client: DynamodbClient,
    private readonly sdk: DynamodbModule,
    options: ResolvedDynamodbOptions,
    private readonly where: string,
    private readonly ownsClient: boolean,
  ) {
    super();
    this.options = options;
    this.maxClockSkewMs = options.maxClockSkewMs;
  }

  /** The table holding this store's leases. */
  get table(): string {
    return this.options.table;
  }

  /**
   * Creates the table when it is missing (partition key `resource`, String; on-demand capacity)
   * and waits until it is active; does nothing to one that exists with that key schema.
   */
  createTable(options: { timeoutMs?: number } = {}): Promise<void> {
    return this.guarded('createTable', () =>
      ensureTable(this.tableTarget(), true, options.timeoutMs),
    );
  }

  /**
   * Whether the table is a global table (replicated between Regions, where conditional writes in
   * two Regions do not exclude each other), from one `DescribeTable`; see dynamodb-doctor.ts.
   * Read-only, within `requestTimeoutMs`.
   */
  diagnose(): Promise<Diagnosis> {
    return this.guarded('diagnose', () =>
      diagnoseDynamodb(this.table, () =>
        this.send(
          'describeTable',
          new this.sdk.DescribeTableCommand(describeTableRequest(this.table)),
        ),
      ),
    );
  }

  protected async doTryAcquire(
    resource: string,
    owner: string,
    ttlMs: number,
  ): Promise<Lease | null> {
    return (await this.acquireOne(resource, owner, ttlMs, 'tryAcquire')).lease;
  }

  /**
   * One conditional `UpdateItem` per resource, up to `concurrency` in flight (DynamoDB has no
   * batch of conditional writes short of `TransactWriteItems`, which fails as a whole when one
   * condition fails). After a failure no new update starts, and the first error is thrown once
   * those in flight have settled: leases they granted are then unknown to the caller and lapse at
   * their TTL.
   */
  protected override doAcquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    return runInOrder(
      resources,
      (resource) => resource,
      this.options.concurrency,
      (resource) => this.acquireOne(resource, owner, ttlMs, 'acquireMany'),
    );
  }

  protected override doRenew(lease: Lease, ttlMs: number | undefined): Promise<Lease | null> {
    return this.renewOne(lease, ttlMs);
  }

  protected override doRelease(lease: LeaseRef): Promise<boolean> {
    return this.releaseOne(lease);
  }

  protected override async doWriteData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    try {
      await this.item('writeData', 'UpdateItem', writeDataRequest(this.table, lease, data));
      return true;
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      return false;
    }
  }

  protected override doRenewWithData(
    lease: Lease,
    ttlMs: number | undefined,
    data: LeaseData | null,
  ): Promise<Lease | null> {
    return this.renewOne(lease, ttlMs, data);
  }

  protected override async doReleaseWithData(
    lease: LeaseRef,
    data: LeaseData | null,
  ): Promise<boolean> {
    return this.releaseOne(lease, data);
  }

  protected doRenewMany(
    leases: readonly Lease[],
    ttlMs: number | undefined,
  ): Promise<(Lease | null)[]> {
    return runInOrder(
      leases,
      (lease) => lease.resource,
      this.options.concurrency,
      (lease) => this.renewOne(lease, ttlMs),
    );
  }

  protected doReleaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    return runInOrder(
      leases,
      (lease) => lease.resource,
      this.options.concurrency,
      (lease) => this.releaseOne(lease),
    );
  }

  protected async doGet(resource: string): Promise<LeaseRecord | null> {
    const answer = (await this.item('get', 'GetItem', getRequest(this.table, resource))) as {
      Item?: Item;
    };
    return answer.Item ? toRecord(answer.Item) : null;
  }

  /**
   * Scans every page (1 MB each), keeping the `limit` first records in resource order after
   * `after`. A scan cannot start at a sort position (items lie in hash order), so every call reads
   * the whole table whatever `after` is: one page of a listing costs a full scan (one read unit
   * per 4 KB of table with consistent reads, one request per 1 MB), and paging through N records
   * `limit` at a time costs N / limit full scans. The prefix and a lower bound for `after` are
   * filtered on the server, which trims what comes back but not what is read or charged; the
   * exact `after` test is made here.
   */
  protected async doList(prefix: string, limit: number, after: string): Promise<LeaseRecord[]> {
    const floor = scanFloor(after);
    let kept: LeaseRecord[] = [];
    let startKey: Item | undefined;
    do {
      const page = (await this.send(
        'list',
        new this.sdk.ScanCommand(scanRequest(this.table, prefix, floor, startKey)),
      )) as { Items?: Item[]; LastEvaluatedKey?: Item };
      for (const item of page.Items ?? []) {
        const record = toRecord(item);
        if (after === '' || compareResources(record.resource, after) > 0) kept.push(record);
      }
      if (kept.length >= 2 * limit) kept = first(kept, limit);
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    return first(kept, limit);
  }

  protected async doClose(): Promise<void> {
    this.wire?.destroy();
    this.wire = undefined;
    this.wireOff = true;
    if (this.ownsClient) (this.client as { destroy?: () => void }).destroy?.();
  }

  /**
   * Sends the hot calls by the wire to `target` from now on (a changed target replaces the wire),
   * unless the store went back to the SDK or is closed.
   */
  private useWire(target: WireTarget, setup: { undici: Undici; connectTimeoutMs: number }): void {
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

  /**
   * One `UpdateItem` or `GetItem` within `requestTimeoutMs`: by the wire where the store has one,
   * else through the SDK. A signature the endpoint calls malformed (and only that) sends the call
   * again through the SDK, which takes the wire away for good unless the SDK's signature is refused
   * too (`byWireElseSdk`).
   */
  private async item(operation: string, name: WireOperation, input: object): Promise<unknown> {
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

  protected override mapError(error: unknown, operation: string): LeaseError {
    return mapDynamodbError(error, operation, this.table, this.where);
  }

  /**
   * One conditional update. Where DynamoDB returns the item that failed the condition, a refusal
   * carries it as `holder` (dynalite does not: no holder there).
   */
  private async acquireOne(
    resource: string,
    owner: string,
    ttlMs: number,
    operation: string,
  ): Promise<AcquireOutcome> {
    const now = this.options.clock.now();
    const expiresAt = now + ttlMs;
    const request = acquireRequest(
      this.table,
      resource,
      owner,
      expiresAt,
      now - this.maxClockSkewMs,
    );
    let answer: { Attributes?: Item };
    try {
      answer = (await this.item(operation, 'UpdateItem', request)) as {
        Attributes?: Item;
      };
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      const item = conditionItem(error);
      const seen = item && toRecord(item);
      if (wasRetried(error)) {
        // An earlier attempt of this same request may have landed before its answer was lost:
        // then the record holds exactly what it wrote, and the lease is ours.
        const record = seen ?? (await this.doGet(resource));
        if (record?.owner === owner && record.expiresAt === expiresAt) {
          const lease = { resource, owner, token: record.token, expiresAt, ttlMs };
          return { resource, lease: withData(lease, record.data) };
        }
      }
      const lapsed = seen && (seen.owner === '' || seen.expiresAt < now - this.maxClockSkewMs);
      if (lapsed && seen.token >= Number.MAX_SAFE_INTEGER)
        throw invalidRecord(resource, `token is ${seen.token}: no safe token is left above it`);
      return seen ? { resource, lease: null, holder: seen } : { resource, lease: null };
    }
    // The condition let only valid records through, but cannot see a fraction: a token read
    // here that is not a positive safe integer (2.5 + 1) is `RECORD_INVALID`, never a lease.
    const { token, data } = toRecord({ resource: { S: resource }, ...answer.Attributes });
    return { resource, lease: withData({ resource, owner, token, expiresAt, ttlMs }, data) };
  }

  /**
   * One conditional update; with `data` (not `undefined`), it is set in the same update. Without,
   * the answer carries no data: the caller's lease keeps what it had, the record is untouched.
   */
  private async renewOne(
    lease: Lease,
    ttlMs: number | undefined,
    data?: LeaseData | null,
  ): Promise<Lease | null> {
    const ttl = ttlMs ?? lease.ttlMs;
    const expiresAt = this.options.clock.now() + ttl;
    const request =
      data === undefined
        ? renewRequest(this.table, lease, expiresAt)
        : renewWithDataRequest(this.table, lease, expiresAt, data);
    const renewed = (at: number): Lease => {
      const base = { resource: lease.resource, owner: lease.owner, token: lease.token };
      return withData(
        { ...base, expiresAt: at, ttlMs: ttl },
        data === undefined ? lease.data : data,
      );
    };
    try {
      await this.item('renew', 'UpdateItem', request);
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      // Still ours, with a later expiry than this renewal would write (a newer renewal landed
      // first)? Then the lease is renewed at least this far: a success, leaving the expiry be.
      const item = conditionItem(error);
      const record = item ? toRecord(item) : await this.doGet(lease.resource);
      if (
        record?.owner !== lease.owner ||
        record.token !== lease.token ||
        record.expiresAt < expiresAt
      )
        return null;
      // The data this renewal carried did not land with it: written now, under the same owner
      // and token (a second request, only in this race of one holder's own renewals).
      if (data !== undefined && !sameData(record.data ?? null, data)) {
        if (!(await this.doWriteData(lease, data))) return null;
      }
      return renewed(record.expiresAt);
    }
    return renewed(expiresAt);
  }

  private async releaseOne(lease: LeaseRef, data?: LeaseData | null): Promise<boolean> {
    try {
      await this.item('release', 'UpdateItem', releaseRequest(this.table, lease, data));
      return true;
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      if (!wasRetried(error)) return false;
      // Released by an earlier attempt whose answer was lost? Only this lease's holder can have
      // emptied the owner at this token: a later acquire would have raised it.
      const item = conditionItem(error);
      const record = item ? toRecord(item) : await this.doGet(lease.resource);
      return record?.owner === '' && record.token === lease.token;
    }
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
  private send(operation: string, command: DynamodbCommand): Promise<unknown> {
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

  private tableTarget() {
    return {
      sdk: this.sdk,
      send: (operation: string, command: DynamodbCommand) => this.send(operation, command),
      table: this.table,
      where: this.where,
    };
  }
}

/** The `limit` first records in code-point order of their resource. */
function first(records: LeaseRecord[], limit: number): LeaseRecord[] {
  return records.sort((a, b) => compareResources(a.resource, b.resource)).slice(0, limit);
}
