import { Option, type Command } from 'commander';
import { redact } from '../../core/store-url.js';
import { durationOption } from '../duration.js';
import { errorLine, scrubPassword } from '../output.js';
import { storeUrl, withCommonOptions, withStore, type StoreOptions } from '../store.js';
import { runWatch } from '../watch/run-watch.js';
import { FAIR_LINE_HELP } from './list.js';

interface WatchCliOptions extends StoreOptions {
  prefix?: string;
  poll: number;
  fairLine?: boolean;
}

export function registerWatch(program: Command): void {
  withCommonOptions(
    program
      .command('watch')
      .description(
        'the live lease table in the terminal; plain lines per change when piped; --json: one JSON object per change',
      )
      .option('--prefix <prefix>', 'only resources starting with this text (matched literally)')
      .addOption(
        new Option(
          '--poll <duration>',
          'time between two listings of the store (releases also arrive at once where the store can watch)',
        )
          .argParser(durationOption(100, 600_000))
          .default(1000, '1s'),
      )
      .option('--fair-line', FAIR_LINE_HELP),
  )
    .addHelpText(
      'after',
      `
A name's permits show as "name  permit i" (--json: "name" and "permit" beside "resource").
Change types: seen (present at the start), acquired, handoff, released, expired, renewed, removed.
Colour on a terminal unless NO_COLOR is set; FORCE_COLOR=1 colours piped output too.

Examples:
  leasehold watch --store sqlite:./leasehold.db
  leasehold watch --store redis://127.0.0.1:6379 --prefix shard/ --poll 500ms
  leasehold watch --store sqlite:./leasehold.db --json | jq -c 'select(.type == "expired")'

Stops on Ctrl-C (SIGINT) or SIGTERM.`,
    )
    .action((options: WatchCliOptions) => {
      const url = storeUrl(options);
      return withStore(url, (store) =>
        runWatch({
          store,
          storeLabel: redact(url),
          prefix: options.prefix ?? '',
          pollMs: options.poll,
          fairLine: options.fairLine === true,
          mode: options.json ? 'json' : process.stdout.isTTY ? 'tty' : 'plain',
          describe: (error) => scrubPassword(errorLine(error), url),
        }),
      );
    });
}
