import type { Command } from 'commander';
import type { LeaseRecord, LeaseStore } from '../../index.js';
import {
  clockNote,
  dataText,
  expiresText,
  fields,
  viewRecord,
  type RecordView,
} from '../format.js';
import { TableListing, jsonView } from '../listing.js';
import { arrangeViews } from '../name-groups.js';
import { CliFailure, print, printJson } from '../output.js';
import { parseKey } from '../record-key.js';
import { storeUrl, withCommonOptions, withStore, type StoreOptions } from '../store.js';
import { quoted, visible } from '../escape.js';
import { FAIR_LINE_HELP } from './list.js';

interface GetOptions extends StoreOptions {
  fairLine?: boolean;
}

/** More than the records one name can have: `LIMITS.permitsMax` permits, 256 places and a ticket. */
const FAMILY_LIMIT = 2000;

export function registerGet(program: Command): void {
  withCommonOptions(
    program
      .command('get')
      .addHelpText(
        'after',
        `\nFor a name with permits, shows every permit's record (--json: "permits", beside the name's own\nrecord).\n\nExamples:\n  leasehold get nightly-report --store postgres://app@db/app\n  leasehold get shard/7 --json\n  leasehold get vendor-api --fair-line   # its permits and who waits in its fair line`,
      )
      .description(
        "show the lease record of one resource, with a name's permits (exit 1 when there is none)",
      )
      .argument('<resource>', 'the resource name')
      .option('--fair-line', FAIR_LINE_HELP),
  ).action((resource: string, options: GetOptions) =>
    withStore(storeUrl(options), async (store) => {
      const [record, family] = await Promise.all([store.get(resource), familyOf(store, resource)]);
      const now = Date.now();
      const views = [...(record ? [record] : []), ...family].map((r) =>
        viewRecord(r, now, store.maxClockSkewMs),
      );
      const { shown } = arrangeViews(views, options.fairLine === true);
      const own = record ? viewRecord(record, now, store.maxClockSkewMs) : undefined;
      const others = shown.filter((row) => row.item.resource !== resource);
      if (!own && others.length === 0)
        throw new CliFailure(`no lease record for ${quoted(resource)}`);
      if (others.length === 0) return printOne(own!, store, options.json === true);
      const permits = shown.filter((row) => row.item.permit !== null);
      const line = shown.filter((row) => row.item.permit === null);
      if (options.json) {
        printJson({
          ...(own ?? { resource, name: resource, permit: 0 }),
          clock: store.capabilities.clock,
          permits: permits.map(jsonView),
          ...(options.fairLine ? { fairLine: line.map(jsonView) } : {}),
        });
        return;
      }
      const held = permits.filter((row) => row.item.state === 'held').length;
      print(
        `${quoted(resource)}: ${permits.length} permit record${permits.length === 1 ? '' : 's'}, ${held} held${options.fairLine ? `; ${line.filter((row) => row.item.state === 'held').length} waiting in its fair line` : ''}`,
      );
      const table = new TableListing('', clockNote(store));
      await table.page(shown);
      await table.end();
    }),
  );
}

/** The records of a plain name's permits and fair line; none for a record key that is itself a part. */
async function familyOf(store: LeaseStore, resource: string): Promise<LeaseRecord[]> {
  const key = parseKey(resource);
  if (key.name !== resource) return [];
  const records = await store.list({ prefix: `${resource}\u0001`, limit: FAMILY_LIMIT });
  return records.filter((r) => parseKey(r.resource).name === resource);
}

function printOne(view: RecordView, store: LeaseStore, json: boolean): void {
  if (json) {
    printJson({ ...view, clock: store.capabilities.clock });
    return;
  }
  const part: [string, string][] =
    view.name === view.resource
      ? []
      : [view.permit === null ? ['part', 'its fair line'] : ['permit', String(view.permit)]];
  print(
    fields([
      ['resource', visible(view.name)],
      ...part,
      ['owner', view.owner ? visible(view.owner) : '- (released)'],
      ['token', String(view.token)],
      ['state', view.state],
      ['expires', expiresText(view)],
      ...(view.data === undefined ? [] : [['data', dataText(view.data)] as [string, string]]),
    ]),
  );
  const note = clockNote(store);
  if (note) print(note);
}
