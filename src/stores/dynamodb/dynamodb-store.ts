import { stripUndefined } from '../../core/options.js';
import type { Diagnosis } from '../../core/doctor.js';
import { ErrorCode, invalidArgument, LeaseError } from '../../core/errors.js';
import { parseStoreUrl, redactEndpoint } from '../../core/store-url.js';
import {
  DelegatingStore,
  type LeaseBatches,
  type LeaseTransitions,
} from '../../core/delegating-store.js';
import { recordBatches, recordTransitions } from '../../core/record-calls.js';
import type { LeaseStore, StoreCapabilities } from '../../core/store.js';
import {
  createClient,
  sdkOf,
  type DynamodbClient,
  type DynamodbModule,
  type DynamodbSdkOption,
} from './dynamodb-driver.js';
import { DynamodbCalls } from './dynamodb-calls.js';
import { diagnoseDynamodb } from './dynamodb-doctor.js';
import { mapDynamodbError } from './dynamodb-errors.js';
import { listRecords } from './dynamodb-list.js';
import {
  resolveConnectOptions,
  resolveDynamodbOptions,
  type DynamodbConnectOptions,
  type DynamodbStoreOptions,
  type ResolvedDynamodbOptions,
} from './dynamodb-options.js';
import { describeTableRequest } from './dynamodb-ops.js';
import { ensureTable } from './dynamodb-table.js';
import { DynamodbTransitions } from './dynamodb-transitions.js';
import { captureTarget, loadUndici, sameTarget, type WireTarget } from '../aws/aws-wire.js';
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
export class DynamodbStore extends DelegatingStore implements LeaseStore {
  readonly capabilities: StoreCapabilities = Object.freeze({
    clock: 'local',
    batch: false,
    watch: false,
    atomicGroupMax: 0,
    data: true,
  });
  readonly maxClockSkewMs: number;
  private readonly options: ResolvedDynamodbOptions;
  private readonly calls: DynamodbCalls;
  /** @internal */
  protected readonly transitions: LeaseTransitions;
  /** @internal */
  protected readonly batches: LeaseBatches;

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
        store?.calls.useWire(seen, wire);
      });
    }
    const where = connect.endpoint
      ? ` at ${redactEndpoint(connect.endpoint)}`
      : connect.region
        ? ` in ${connect.region}`
        : '';
    return DynamodbStore.start(client, sdk, resolved, where, true, (made) => {
      store = made; // later targets go to it
      if (sentTo && wire) made.calls.useWire(sentTo, wire);
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
      await ensureTable(store.calls.tableTarget(), options.createTable);
      onMade?.(store);
    } catch (error) {
      await store.close().catch(() => {});
      throw store.mapError(error, 'open');
    }
    return store;
  }

  private constructor(
    client: DynamodbClient,
    sdk: DynamodbModule,
    options: ResolvedDynamodbOptions,
    where: string,
    ownsClient: boolean,
  ) {
    super();
    this.options = options;
    this.maxClockSkewMs = options.maxClockSkewMs;
    this.calls = new DynamodbCalls(client, sdk, options, where, ownsClient);
    const records = new DynamodbTransitions(this.calls, options.clock, options.maxClockSkewMs);
    this.transitions = recordTransitions(records);
    // `list` is a `Scan` of the whole table, sorted here, on every call (see `listRecords`).
    this.batches = recordBatches(records, options.concurrency, (prefix, limit, after) =>
      listRecords(this.calls, { prefix, limit, after }),
    );
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
      ensureTable(this.calls.tableTarget(), true, options.timeoutMs),
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
        this.calls.send(
          'describeTable',
          new this.calls.sdk.DescribeTableCommand(describeTableRequest(this.table)),
        ),
      ),
    );
  }

  protected async doClose(): Promise<void> {
    this.calls.close();
  }

  protected override mapError(error: unknown, operation: string): LeaseError {
    return mapDynamodbError(error, operation, this.table, this.calls.where);
  }
}
