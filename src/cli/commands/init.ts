import type { Command } from 'commander';
import { openQuietly } from '../open-quietly.js';
import { print, printJson } from '../output.js';
import { storeUrl, withCommonOptions, type StoreOptions } from '../store.js';

/** A store that can create or migrate its schema on request. */
interface Initialisable {
  init?: () => Promise<void>;
}

export function registerInit(program: Command): void {
  withCommonOptions(
    program
      .command('init')
      .addHelpText(
        'after',
        `\nExamples:\n  leasehold init --store 'dynamodb://leases?region=eu-west-1'\n  leasehold init --store 's3://my-bucket/leases?region=eu-west-1'`,
      )
      .description(
        'create the store’s tables (or schema) if missing, ahead of first use; safe to run again',
      ),
  ).action(async (options: StoreOptions) => {
    const url = storeUrl(options);
    const store = await openQuietly(url, { create: true });
    try {
      await (store as Initialisable).init?.();
    } finally {
      await store.close();
    }
    if (options.json) printJson({ ready: true, clock: store.capabilities.clock });
    else
      print(
        `ready: the store is set up (expiry decided by the ${store.capabilities.clock === 'store' ? 'store’s' : 'callers’'} clock)`,
      );
  });
}
