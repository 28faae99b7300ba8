import type { Command } from 'commander';
import { DEMO_LIMITS, demoSettings } from '../harness/demo-settings.js';
import { reportText } from '../demo/report.js';
import { runFleetDemo } from '../demo/run-fleet-demo.js';
import { durationOption } from '../duration.js';
import { integerOption } from '../numbers.js';
import { CliFailure, printJson } from '../output.js';
import { requireShared } from '../store.js';

interface DemoOptions {
  store?: string;
  workers: number;
  resources: number;
  ttl?: number;
  quick?: boolean;
  json?: boolean;
  dashboard?: number | true;
}

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description(
      'worker processes share leases through SIGKILL, SIGTERM, SIGSTOP and a join; fenced writes; a safety verdict',
    )
    .option('--store <url>', 'store URL (default: a fresh SQLite file in a temp folder)')
    .option(
      '--workers <n>',
      'worker processes to start',
      integerOption(DEMO_LIMITS.minWorkers, DEMO_LIMITS.maxWorkers),
      4,
    )
    .option(
      '--resources <n>',
      'resources the fleet shares',
      integerOption(1, DEMO_LIMITS.maxResources),
      32,
    )
    .option(
      '--ttl <duration>',
      'lease TTL; heartbeat TTL/4, reconcile about TTL/2 (default: 2s, 1s with --quick)',
      durationOption(DEMO_LIMITS.minTtlMs, DEMO_LIMITS.maxTtlMs),
    )
    .option('--quick', 'a shorter run (TTL 1s, shorter settle waits): under 20 s')
    .option('--json', 'print only the final report, as JSON')
    .option(
      '--dashboard [port]',
      "serve the live dashboard on the demo's store while it runs (default port 7878; 0 picks a free one)",
      integerOption(0, 65535),
    )
    .addHelpText(
      'after',
      `
Exit codes: 0 safe and every fault recovered, 1 unsafe or a fault not recovered, 2 usage error.

Examples:
  leasehold demo
  leasehold demo --quick --json
  leasehold demo --dashboard        # open http://127.0.0.1:7878/ to watch it
  leasehold demo --store postgres://app@127.0.0.1/app --workers 6 --resources 48`,
    )
    .action(async (options: DemoOptions) => {
      if (options.resources < options.workers) {
        throw new CliFailure(
          `--resources (${options.resources}) must be at least --workers (${options.workers}), so every worker holds a lease`,
          2,
        );
      }
      if (options.store !== undefined)
        requireShared(
          options.store,
          "the demo's worker processes need a store they share (omit --store for a temp SQLite file)",
        );
      const settings = demoSettings({
        workers: options.workers,
        resources: options.resources,
        ttlMs: options.ttl,
        quick: options.quick === true,
      });
      const mode = options.json ? 'json' : process.stdout.isTTY ? 'tty' : 'plain';
      const report = await runFleetDemo({
        settings,
        store: options.store,
        ttlIsDefault: options.ttl === undefined,
        mode,
        dashboardPort: options.dashboard === true ? 7878 : options.dashboard,
      });
      if (options.json) printJson(report);
      else process.stdout.write(`${reportText(report)}\n`);
      if (!report.ok) {
        throw new CliFailure(
          report.safe
            ? 'a fault did not recover in time'
            : 'the safety check failed (see the report)',
          1,
          { reported: true },
        );
      }
    });
}
