import type { Command } from 'commander';
import { LIMITS } from '../../index.js';
import { clockNote, expiresText, table, viewRecord } from '../format.js';
import { integerOption } from '../numbers.js';
import { print, printJson } from '../output.js';
import { storeUrl, withCommonOptions, withStore, type StoreOptions } from '../store.js';

interface ListOptions extends StoreOptions {
  prefix?: string;
  limit?: number;
}

export function registerList(program: Command): void {
  withCommonOptions(
    program
      .command('list')
      .description('list lease records in resource order')
      .option('--prefix <prefix>', 'only resources starting with this text (matched literally)')
      .option(
        '--limit <n>',
        'at most this many records',
        integerOption(1, LIMITS.listMaxLimit),
        1000,
      ),
  ).action((options: ListOptions) =>
    withStore(storeUrl(options), async (store) => {
      const records = await store.list({ prefix: options.prefix ?? '', limit: options.limit });
      const now = Date.now();
      const views = records.map((r) => viewRecord(r, now, store.maxClockSkewMs));
      if (options.json) {
        printJson({ clock: store.capabilities.clock, checkedAt: now, leases: views });
        return;
      }
      if (views.length === 0) {
        print(
          options.prefix
            ? `no lease records under ${JSON.stringify(options.prefix)}`
            : 'no lease records',
        );
        return;
      }
      const rows = views.map((v) => [
        v.resource,
        v.owner || '-',
        String(v.token),
        v.state,
        expiresText(v),
      ]);
      print(table(['RESOURCE', 'OWNER', 'TOKEN', 'STATE', 'EXPIRES'], rows, [2]));
      const note = clockNote(store);
      if (note) print(note);
    }),
  );
}
