import type { Command } from 'commander';
import { clockNote, expiresText, fields, viewRecord } from '../format.js';
import { CliFailure, print, printJson } from '../output.js';
import { storeUrl, withCommonOptions, withStore, type StoreOptions } from '../store.js';
import { quoted, visible } from '../escape.js';

export function registerGet(program: Command): void {
  withCommonOptions(
    program
      .command('get')
      .addHelpText(
        'after',
        `\nExamples:\n  leasehold get nightly-report --store postgres://app@db/app\n  leasehold get shard/7 --json`,
      )
      .description('show the lease record of one resource (exit 1 when there is none)')
      .argument('<resource>', 'the resource name'),
  ).action((resource: string, options: StoreOptions) =>
    withStore(storeUrl(options), async (store) => {
      const record = await store.get(resource);
      if (!record) throw new CliFailure(`no lease record for ${quoted(resource)}`);
      const view = viewRecord(record, Date.now(), store.maxClockSkewMs);
      if (options.json) {
        printJson({ ...view, clock: store.capabilities.clock });
        return;
      }
      print(
        fields([
          ['resource', visible(view.resource)],
          ['owner', view.owner ? visible(view.owner) : '- (released)'],
          ['token', String(view.token)],
          ['state', view.state],
          ['expires', expiresText(view)],
        ]),
      );
      const note = clockNote(store);
      if (note) print(note);
    }),
  );
}
