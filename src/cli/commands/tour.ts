import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Option, type Command } from 'commander';
import { LIMITS } from '../../index.js';
import { redact } from '../../core/store-url.js';
import { Narrator } from '../demo/tour/narrator.js';
import { runTour } from '../demo/tour/run-tour.js';
import { durationOption, formatDuration } from '../duration.js';
import { keepAlive, withStore } from '../store.js';

interface TourOptions {
  store?: string;
  ttl: number;
  json?: boolean;
}

export function registerTour(program: Command): void {
  program
    .command('tour')
    .addHelpText(
      'after',
      `\nExamples:\n  leasehold tour\n  leasehold tour --store postgres://app@db/app`,
    )
    .description(
      'a short narrated run: two workers, heartbeats, a freeze, takeover with a higher token, a fenced stale write',
    )
    .option('--store <url>', 'store URL (default: a fresh SQLite file in a temp folder)')
    .addOption(
      new Option('--ttl <duration>', 'the lease TTL; the run lasts about 3.5 TTLs')
        .argParser(durationOption(LIMITS.ttlMinMs, 60_000))
        .default(2000, formatDuration(2000)),
    )
    .option('--json', 'one JSON object per step')
    .action(async (options: TourOptions) => {
      const fresh = options.store === undefined;
      const url =
        options.store ??
        `sqlite:${join(mkdtempSync(join(tmpdir(), 'leasehold-tour-')), 'tour.db')}`;
      const say = new Narrator(options.json === true);
      // Inside, so that a --ttl the store cannot take is refused before the narration starts.
      await withStore(url, (store) => {
        say.note(
          'start',
          `leasehold tour: worker-a (A) and worker-b (B) both want "report-job"; TTL ${formatDuration(options.ttl)}, heartbeat every ${formatDuration(Math.floor(options.ttl / 4))}`,
          {
            ttlMs: options.ttl,
          },
        );
        say.note(
          'store',
          `store: ${redact(url)}${fresh ? ' (a fresh temp file; your ./leasehold.db is untouched)' : ''}`,
          {
            store: redact(url),
          },
        );
        return keepAlive(runTour(store, options.ttl, say));
      });
      if (fresh && !options.json) say.note('inspect', `inspect it: leasehold list --store ${url}`);
    });
}
