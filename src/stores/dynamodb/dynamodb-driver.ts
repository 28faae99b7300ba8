import { attemptTimeoutMs, checkSdk } from '../aws/aws-sdk.js';
import { loadDriver } from '../../core/load-driver.js';
import { isLoopback, type DynamodbConnectOptions } from './dynamodb-options.js';

/** A DynamoDB attribute value, as far as this store writes and reads them. */
export interface AttributeValue {
  S?: string;
  N?: string;
}

export type Item = Record<string, AttributeValue>;

/** A command object from `@aws-sdk/client-dynamodb`; only the SDK looks inside. */
export type DynamodbCommand = object;

/** The part of a `DynamoDBClient` (from `@aws-sdk/client-dynamodb` v3) this store uses. */
export interface DynamodbClient {
  /** Sends one command; the store passes an `abortSignal` carrying its deadline. */
  send(command: DynamodbCommand, options?: { abortSignal?: AbortSignal }): Promise<unknown>;
}

type CommandClass = new (input: object) => DynamodbCommand;

/** The part of the `@aws-sdk/client-dynamodb` module this store uses. */
export interface DynamodbModule {
  DynamoDBClient: new (config: object) => DynamodbClient & { destroy(): void };
  UpdateItemCommand: CommandClass;
  GetItemCommand: CommandClass;
  ScanCommand: CommandClass;
  DescribeTableCommand: CommandClass;
  CreateTableCommand: CommandClass;
}

export const SDK_PACKAGE = '@aws-sdk/client-dynamodb';

export function loadSdk(): Promise<DynamodbModule> {
  return loadDriver<DynamodbModule>(SDK_PACKAGE, 'dynamodb');
}

/** For bundlers, which cannot see the store's own `import()` of the AWS SDK. */
export interface DynamodbSdkOption {
  /**
   * The `@aws-sdk/client-dynamodb` module, imported by you (`await import(…)` or a static
   * import), used instead of loading it by name.
   */
  sdk?: object;
}

const SDK_CLASSES = [
  'DynamoDBClient',
  'UpdateItemCommand',
  'GetItemCommand',
  'ScanCommand',
  'DescribeTableCommand',
  'CreateTableCommand',
] as const;

/** The SDK module a caller passed, checked for what the store uses, or the one loaded by name. */
export async function sdkOf(given: object | undefined): Promise<DynamodbModule> {
  return given === undefined
    ? loadSdk()
    : checkSdk<DynamodbModule>(given, SDK_CLASSES, SDK_PACKAGE);
}

export { attemptTimeoutMs } from '../aws/aws-sdk.js';

/** Environment variables through which the SDK's default chain finds credentials. */
const CREDENTIAL_VARIABLES = [
  'AWS_ACCESS_KEY_ID',
  'AWS_PROFILE',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
];

/**
 * A client for what a URL names. Credentials come from the SDK's default chain, except that a
 * loopback endpoint (DynamoDB Local, dynalite) with none in the environment gets placeholder
 * static ones, which local servers accept, instead of a slow probe of the instance metadata service.
 */
export function createClient(
  sdk: DynamodbModule,
  connect: DynamodbConnectOptions & { connectTimeoutMs: number },
  requestTimeoutMs: number,
): DynamodbClient & { destroy(): void } {
  const local = connect.endpoint !== undefined && isLoopback(connect.endpoint);
  const env = process.env;
  const noCredentials = CREDENTIAL_VARIABLES.every((name) => !env[name]);
  const noRegion = !env.AWS_REGION && !env.AWS_DEFAULT_REGION;
  return new sdk.DynamoDBClient({
    region: connect.region ?? (local && noRegion ? 'us-east-1' : undefined),
    endpoint: connect.endpoint,
    credentials:
      local && noCredentials
        ? { accessKeyId: 'leasehold-local', secretAccessKey: 'leasehold-local' }
        : undefined,
    maxAttempts: 3,
    requestHandler: {
      connectionTimeout: connect.connectTimeoutMs,
      requestTimeout: attemptTimeoutMs(requestTimeoutMs),
      throwOnRequestTimeout: true,
    },
  });
}
