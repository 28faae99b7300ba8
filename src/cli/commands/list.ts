import { Option, type Command } from 'commander';
import type { LeaseStore } from '../../index.js';
import { clockNote, viewRecord, type RecordView } from '../format.js';
import { JsonListing, TableListing, type Listing } from '../listing.js';
import { NameGroups } from '../name-groups.js';
import { integerOption } from '../numbers.js';
import { storeUrl, withCommonOptions, withStore, type StoreOptions } from '../store.js';

/** Records read from the store per `list` call. */
const PAGE_SIZE = 1000;

interface ListOptions extends StoreOptions {
  prefix?: string;
  /** `Infinity`: every record. */
  limit: number;
  fairLine?: boolean;
}

/** The --fair-line option of `list`, `get` and `watch`. */
export const FAIR_LINE_HELP =
  "also show the records of fair lines (a waiter's place, the ticket), as part of their name";

export function registerList(program: Command): void {
  withCommonOptions(
    program
      .command('list')
      .addHelpText(
        'after',
        `\nA name's permits are shown together after its own record ("api  permit 2"); records of fair\nlines are left out unless --fair-line. --json gives each record's key as "resource", with "name"\nand "permit" (null for a fair-line record) beside it.\n\nExamples:\n  leasehold list --prefix shard/ --store redis://127.0.0.1:6379\n  leasehold list --limit 20\n  leasehold list --json > leases.json`,
      )
      .description('list lease records in resource order, reading the store a page at a time')
      .option('--prefix <prefix>', 'only resources starting with this text (matched literally)')
      .addOption(
        new Option('--limit <n>', 'stop after this many records; stderr says if more exist')
          .argParser(integerOption(1, Number.MAX_SAFE_INTEGER))
          .default(Infinity, 'all'),
      )
      .option('--fair-line', FAIR_LINE_HELP),
  ).action((options: ListOptions) =>
    withStore(storeUrl(options), async (store) => {
      const prefix = options.prefix ?? '';
      const listing: Listing = options.json
        ? new JsonListing(store.capabilities.clock, Date.now())
        : new TableListing(
            prefix ? `no lease records under ${JSON.stringify(prefix)}` : 'no lease records',
            clockNote(store),
          );
      const groups = new NameGroups(options.fairLine === true);
      const { shown, more } = await listPages(store, prefix, options.limit, async (views) =>
        listing.page(groups.page(views)),
      );
      await listing.page(groups.end());
      await listing.end(more);
      if (groups.hidden > 0) process.stderr.write(hiddenNote(groups.hidden, groups.candidates));
      if (more) {
        process.stderr.write(
          `leasehold: showing the first ${shown} records; more exist: raise --limit, or narrow with --prefix\n`,
        );
      }
    }),
  );
}

/**
 * Reads up to `limit` records page by page, each judged against the clock when its page was read,
 * and hands each page to `take`. Asks for one record past the limit to tell whether more exist.
 */
async function listPages(
  store: LeaseStore,
  prefix: string,
  limit: number,
  take: (views: RecordView[]) => Promise<void>,
): Promise<{ shown: number; more: boolean }> {
  let shown = 0;
  let after = '';
  for (;;) {
    const want = Math.min(PAGE_SIZE, limit - shown + 1);
    const page = await store.list({ prefix, limit: want, after });
    const now = Date.now();
    const kept = page.slice(0, limit - shown);
    await take(kept.map((r) => viewRecord(r, now, store.maxClockSkewMs)));
    shown += kept.length;
    if (kept.length < page.length) return { shown, more: true };
    if (page.length < want) return { shown, more: false };
    after = page.at(-1)!.resource;
  }
}

/** What `list` says on stderr about the records around leases it left out. */
function hiddenNote(hidden: number, candidates: number): string {
  const plural = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;
  const fairLine = hidden - candidates;
  const parts = [
    ...(fairLine > 0 ? [plural(fairLine, 'fair-line record')] : []),
    ...(candidates > 0 ? [plural(candidates, 'election candidate registration')] : []),
  ];
  return `leasehold: ${parts.join(' and ')} not shown; --fair-line shows them\n`;
}
