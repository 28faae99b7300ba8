import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { LIMITS } from '../../index.js';
import { redact } from '../../core/open-store.js';
import { Narrator } from '../demo/narrator.js';
import { runDemo } from '../demo/run-demo.js';
import { durationOption, formatDuration } from '../duration.js';
import { keepAlive, withStore } from '../store.js';

interface DemoOptions {
  store?: string;
  ttl: number;
  json?: boolean;
}

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description(
      'a short narrated run: two workers, heartbeats, a freeze, takeover with a higher token, a fenced stale write',
    )
    .option('--store <url>', 'store URL (default: a fresh SQLite file in a temp folder)')
    .option(
      '--ttl <duration>',
      'the lease TTL; the run lasts about 3.5 TTLs',
      durationOption(LIMITS.ttlMinMs, 60_000),
      2000,
    )
    .option('--json', 'one JSON object per step')
    .action(async (options: DemoOptions) => {
      const fresh = options.store === undefined;
      const url =
        options.store ??
        `sqlite:${join(mkdtempSync(join(tmpdir(), 'leasehold-demo-')), 'demo.db')}`;
      const say = new Narrator(options.json === true);
      say.note(
        'start',
        `leasehold demo: worker-a (A) and worker-b (B) both want "report-job"; TTL ${formatDuration(options.ttl)}, heartbeat every ${formatDuration(Math.floor(options.ttl / 4))}`,
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
      await withStore(url, (store) => keepAlive(runDemo(store, options.ttl, say)));
      if (fresh && !options.json) say.note('inspect', `inspect it: leasehold list --store ${url}`);
    });
}
