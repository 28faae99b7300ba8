import {
  boolParam,
  checkUrlOptions,
  intParam,
  takeParams,
  urlError,
  urlPassword,
  type StoreUrl,
  redactEndpoint,
} from '../../core/store-url.js';
import {
  resolveS3Connect,
  resolveS3Options,
  type S3ConnectOptions,
  type S3StoreOptions,
} from './s3-options.js';

/** What an `s3://` URL asks for. */
export interface S3Target {
  readonly store: S3StoreOptions & { bucket: string };
  readonly connect: S3ConnectOptions;
  /** The URL with its keys hidden, for messages. */
  readonly redacted: string;
}

const FORM = 's3://BUCKET/PREFIX?region=us-east-1';
const PARAMS = [
  'region',
  'endpoint',
  'forcePathStyle',
  'maxClockSkewMs',
  'requestTimeoutMs',
  'connectTimeoutMs',
  'concurrency',
  'createBucket',
  'fastPath',
];

/**
 * `s3://[KEY_ID:SECRET@]BUCKET[/PREFIX]?region=&endpoint=&forcePathStyle=&maxClockSkewMs=&requestTimeoutMs=&connectTimeoutMs=&concurrency=&createBucket=&fastPath=`.
 * Keys in the user info are percent-decoded and never shown: messages quote the URL with the
 * whole user info replaced by `***`. Every value is checked here, before a client is made.
 */
export function parseS3Url(url: StoreUrl): S3Target {
  const redacted = redactS3(url.redacted);
  const safe = { ...url, redacted };
  const hint = `expected ${FORM}`;
  if (!url.rest.startsWith('//')) throw urlError(safe, 'no bucket', { hint });
  let body = url.rest.slice(2);
  let credentials: S3ConnectOptions['credentials'];
  const password = urlPassword(`s3:${url.rest}`);
  const slash = body.indexOf('/');
  const at = body.lastIndexOf('@', slash === -1 ? body.length : slash);
  if (password !== undefined) {
    const colon = body.indexOf(':');
    const end = colon + 1 + password.length;
    if (colon === -1 || body[end] !== '@')
      throw urlError(safe, 'malformed user info', {
        hint: 'write s3://KEY_ID:SECRET@BUCKET/PREFIX, percent-encoding / ? # @ in the keys',
      });
    credentials = {
      accessKeyId: decode(safe, body.slice(0, colon), 'the access key id'),
      secretAccessKey: decode(safe, password, 'the secret key'),
    };
    body = body.slice(end + 1);
  } else if (at !== -1) {
    throw urlError(safe, 'user info without a secret', {
      hint: 'write s3://KEY_ID:SECRET@BUCKET/PREFIX, or leave the keys to the AWS SDK chain',
    });
  }
  const cut = body.indexOf('/');
  const bucket = decode(safe, cut === -1 ? body : body.slice(0, cut), 'the bucket');
  const prefix = cut === -1 ? '' : decode(safe, body.slice(cut + 1), 'the prefix');
  if (bucket === '') throw urlError(safe, 'no bucket', { hint });
  const params = takeParams(safe, PARAMS);
  const target: S3Target = {
    store: {
      bucket,
      prefix,
      maxClockSkewMs: intParam(safe, params, 'maxClockSkewMs'),
      requestTimeoutMs: intParam(safe, params, 'requestTimeoutMs'),
      concurrency: intParam(safe, params, 'concurrency'),
      createBucket: boolParam(safe, params, 'createBucket'),
      fastPath: boolParam(safe, params, 'fastPath'),
    },
    connect: {
      region: params.region,
      endpoint: params.endpoint,
      forcePathStyle: boolParam(safe, params, 'forcePathStyle'),
      connectTimeoutMs: intParam(safe, params, 'connectTimeoutMs'),
      credentials,
    },
    redacted,
  };
  checkUrlOptions(safe, () => {
    resolveS3Options(target.store);
    return resolveS3Connect(target.connect);
  });
  return target;
}

function decode(url: Pick<StoreUrl, 'redacted'>, text: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch (error) {
    throw urlError(url, `a malformed %-escape in ${what}`, { cause: error });
  }
}

/**
 * An already redacted `s3://` URL with its access key id hidden too (`s3://***@BUCKET/…`), and
 * credentials someone put into an `endpoint=` parameter, encoded or not.
 */
export function redactS3(redacted: string): string {
  return redactEndpoint(
    redacted
      .replace(/^(\s*s3:\/\/)[^@/?#]*@/i, '$1***@')
      .replace(/^(\s*s3:\/\/)[^@]*:\*\*\*@/i, '$1***@'),
  );
}
