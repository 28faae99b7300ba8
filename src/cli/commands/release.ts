import type { Command } from 'commander';
import { integerOption } from '../numbers.js';
import { CliFailure, print, printJson } from '../output.js';
import { storeUrl, withCommonOptions, withStore, type StoreOptions } from '../store.js';
import { quoted } from '../escape.js';

interface ReleaseOptions extends StoreOptions {
  owner: string;
  token: number;
}

export function registerRelease(program: Command): void {
  withCommonOptions(
    program
      .command('release')
      .addHelpText('after', `\nExamples:\n  leasehold release nightly-report --owner ops --token 7`)
      .description('give a lease up; only its owner with its current token can')
      .argument('<resource>', 'the resource name')
      .requiredOption('--owner <id>', 'the owner the lease was acquired for')
      .requiredOption(
        '--token <n>',
        'the fencing token the lease was granted with',
        integerOption(1, Number.MAX_SAFE_INTEGER),
      ),
  ).action((resource: string, options: ReleaseOptions) =>
    withStore(storeUrl(options), async (store) => {
      const { owner, token } = options;
      const released = await store.release({ resource, owner, token });
      if (options.json) printJson({ resource, owner, token, released });
      if (!released) {
        throw new CliFailure(
          `not released: lease on ${quoted(resource)} is not held by ${quoted(owner)} with token ${token}`,
        );
      }
      if (!options.json)
        print(`released ${quoted(resource)} (owner ${quoted(owner)}, token ${token})`);
    }),
  );
}
