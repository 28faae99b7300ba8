import {
  AwsWire,
  retryOf,
  serviceError,
  type Reading,
  type WireAnswer,
  type WireOptions,
  type WireTarget,
} from '../aws/aws-wire.js';

/** The operations that go by the wire; everything else goes through the SDK. */
export type WireOperation = 'UpdateItem' | 'GetItem';

/**
 * The DynamoDB store's hot calls (`UpdateItem`, `GetItem`) as DynamoDB's JSON 1.0 protocol over
 * `AwsWire` (see aws-wire.ts for what it keeps of the SDK). Measured on `renewMany` of 10,000
 * leases, the SDK spent about 550–700 µs of client CPU per `UpdateItem`; this path about 160–190
 * (docs/stores/dynamodb.md). Errors come back as the SDK's would: the type after `#` in `__type` as the
 * name, the message, and the `Item` a failed condition returns.
 */
export class DynamodbWire {
  private readonly wire: AwsWire;

  constructor(
    readonly target: WireTarget,
    options: WireOptions,
  ) {
    this.wire = new AwsWire(target, options);
  }

  /** One call, retried as the SDK would; resolves to the parsed answer, rejects with an SDK-shaped error. */
  send(operation: WireOperation, input: object): Promise<unknown> {
    return this.wire.send(
      {
        method: 'POST',
        path: this.target.path,
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': `DynamoDB_20120810.${operation}`,
        },
        body: JSON.stringify(input),
      },
      readJson,
    );
  }

  /** Closes the kept-alive connections. */
  destroy(): void {
    this.wire.destroy();
  }
}

/** DynamoDB's answer: its JSON body, or the error it carries. */
function readJson({ status, headers, text }: WireAnswer): Reading<unknown> {
  let parsed: Record<string, unknown> | undefined;
  try {
    parsed = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  } catch {
    parsed = undefined;
  }
  if (status >= 200 && status < 300 && parsed !== undefined) return { value: parsed };
  const header = headers['x-amzn-errortype'];
  const type = String(parsed?.__type ?? (Array.isArray(header) ? header[0] : header) ?? '');
  const name = type.slice(type.lastIndexOf('#') + 1).split(':')[0] || `HTTP ${status}`;
  const message = String(parsed?.message ?? parsed?.Message ?? (text.slice(0, 200) || name));
  const error = serviceError(
    name,
    message,
    status,
    parsed?.Item !== undefined ? { Item: parsed.Item } : {},
  );
  const { throttled, retry } = retryOf(error, status);
  // A body that is not DynamoDB's JSON (a proxy's error page, a cut answer) is worth another try.
  return { error, throttled, retry: retry || parsed === undefined };
}
