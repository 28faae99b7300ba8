import {
  AwsWire,
  retryOf,
  serviceError,
  type Reading,
  type WireAnswer,
  type WireOptions,
  type WireError,
  type WireTarget,
} from '../aws/aws-wire.js';

/**
 * The S3 store's hot calls — the GET of a record and its conditional PUT — as plain S3 requests
 * over `AwsWire` (see aws-wire.ts for what it keeps of the SDK), to the endpoint and path style
 * the SDK resolved: `base` is the path the SDK put before an object's key (`/BUCKET/` path-style,
 * `/` virtual-hosted), read off one of its own requests (see `basePathOf`). Payloads are signed
 * (`x-amz-content-sha256`), as the SDK signs them. Errors come back as the SDK's would: S3's
 * `Code` as the name, its `Message`, the HTTP status in `$metadata`.
 */
export class S3Wire {
  private readonly wire: AwsWire;

  constructor(
    readonly target: WireTarget,
    private readonly base: string,
    options: WireOptions,
  ) {
    this.wire = new AwsWire(target, options);
  }

  /** The object's body and ETag (as sent, quotes and all); rejects with `NoSuchKey` when absent. */
  get(key: string): Promise<{ body: string; etag: string }> {
    return this.wire.send(
      { method: 'GET', path: this.base + keyPath(key), headers: {}, body: '', contentHash: true },
      (answer): Reading<{ body: string; etag: string }> =>
        answer.status === 200
          ? { value: { body: answer.text, etag: header(answer, 'etag') } }
          : errorOf(answer),
    );
  }

  /** A PUT of `body` with the condition headers given (`if-match` / `if-none-match`); its ETag. */
  put(key: string, body: string, conditions: Readonly<Record<string, string>>): Promise<string> {
    return this.wire.send(
      {
        method: 'PUT',
        path: this.base + keyPath(key),
        headers: { 'content-type': 'application/json', ...conditions },
        body,
        contentHash: true,
      },
      (answer): Reading<string> =>
        answer.status === 200 ? { value: header(answer, 'etag') } : errorOf(answer),
    );
  }

  destroy(): void {
    this.wire.destroy();
  }
}

/** A key as the SDK puts it in a path: each `/`-separated segment URI-encoded, `!'()*` too. */
export function keyPath(key: string): string {
  return key
    .split('/')
    .map((segment) =>
      encodeURIComponent(segment).replace(
        /[!'()*]/g,
        (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
      ),
    )
    .join('/');
}

/** What the SDK put before `key` in `path`, or `undefined` when the path does not end with it. */
export function basePathOf(path: string, key: string): string | undefined {
  const tail = keyPath(key);
  return path.endsWith(tail) && path.length > tail.length
    ? path.slice(0, path.length - tail.length)
    : undefined;
}

function header(answer: WireAnswer, name: string): string {
  const value = answer.headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? '';
}

/** S3's error answer: `<Error><Code>…</Code><Message>…</Message></Error>`, or none (a HEAD-like 404). */
function errorOf(answer: WireAnswer): { error: WireError; retry: boolean; throttled: boolean } {
  const { status, text } = answer;
  const code = xmlText(text, 'Code');
  const name =
    code ??
    (status === 404 ? 'NotFound' : status === 412 ? 'PreconditionFailed' : `HTTP ${status}`);
  const message = xmlText(text, 'Message') ?? (code ? code : `S3 answered HTTP ${status}`);
  return retryOf(serviceError(name, message, status, { Code: name }), status);
}

function xmlText(text: string, tag: string): string | undefined {
  const found = new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(text);
  if (!found) return undefined;
  return found[1]!
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}
