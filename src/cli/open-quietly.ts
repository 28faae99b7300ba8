import { openStore, type LeaseStore, type OpenStoreOptions } from '../index.js';

/**
 * The AWS SDK's documented switch for its multi-line notice that future SDK releases will need a
 * newer Node.js (aws/aws-sdk-js-v3#7983). The SDK reads it when a client is created, once per process.
 */
const AWS_NODE_NOTICE = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED';

/**
 * `openStore` for the CLI, without the AWS SDK's Node.js support notice, which would bury the one
 * line a command prints. The switch is set only while the store opens, so a command started by
 * `leasehold run` does not inherit it, and a value the user set (`false` shows the notice) wins.
 * Warnings of leasehold's own are untouched.
 */
export async function openQuietly(
  url: string,
  options?: OpenStoreOptions,
): Promise<LeaseStore & AsyncDisposable> {
  if (process.env[AWS_NODE_NOTICE] !== undefined) return openStore(url, options);
  process.env[AWS_NODE_NOTICE] = 'true';
  try {
    return await openStore(url, options);
  } finally {
    delete process.env[AWS_NODE_NOTICE];
  }
}
