import { Option, type Command } from 'commander';
import { LIMITS } from '../../index.js';
import { permitResource } from '../../core/permits.js';
import { integerOption } from '../numbers.js';
import { CliFailure, print, printJson } from '../output.js';
import { keyFields } from '../record-key.js';
import { storeUrl, withCommonOptions, withStore, type StoreOptions } from '../store.js';
import { quoted } from '../escape.js';

interface ReleaseOptions extends StoreOptions {
  owner: string;
  token: number;
  permit?: number;
}

export function registerRelease(program: Command): void {
  withCommonOptions(
    program
      .command('release')
      .addHelpText(
        'after',
        `\nExamples:\n  leasehold release nightly-report --owner ops --token 7\n  leasehold release vendor-api --permit 2 --owner w1 --token 4   # a permit "acquire --permits" gave`,
      )
      .description('give a lease up; only its owner with its current token can')
      .argument('<resource>', 'the resource name')
      .requiredOption('--owner <id>', 'the owner the lease was acquired for')
      .requiredOption(
        '--token <n>',
        'the fencing token the lease was granted with',
        integerOption(1, Number.MAX_SAFE_INTEGER),
      )
      .addOption(
        new Option(
          '--permit <i>',
          'release permit i of the resource (as "acquire --permits" printed it)',
        ).argParser(integerOption(0, LIMITS.permitsMax - 1)),
      ),
  ).action((resource: string, options: ReleaseOptions) =>
    withStore(storeUrl(options), async (store) => {
      const { owner, token } = options;
      const key =
        options.permit === undefined ? resource : permitResource(resource, options.permit);
      const { name, permit } = keyFields(key);
      const released = await store.release({ resource: key, owner, token });
      if (options.json) printJson({ resource: key, name, permit, owner, token, released });
      const what =
        permit !== null && permit > 0 ? `permit ${permit} of ${quoted(name)}` : quoted(key);
      if (!released) {
        throw new CliFailure(
          `not released: lease on ${what} is not held by ${quoted(owner)} with token ${token}`,
        );
      }
      if (!options.json) print(`released ${what} (owner ${quoted(owner)}, token ${token})`);
    }),
  );
}
