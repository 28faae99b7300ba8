import { Option, type Command } from 'commander';
import { redact } from '../../core/store-url.js';
import { DASHBOARD_DEFAULTS, startDashboard } from '../dashboard/server.js';
import { untilSignal } from '../live/until-signal.js';
import { durationOption, formatDuration } from '../duration.js';
import { visible } from '../escape.js';
import { integerOption } from '../numbers.js';
import { CliFailure, print } from '../output.js';
import { storeUrl, withStore } from '../store.js';

interface DashboardCliOptions {
  store?: string;
  port: number;
  host: string;
  poll: number;
  adminToken?: string;
}

export function registerDashboard(program: Command): void {
  program
    .command('dashboard')
    .description(
      "a live web page of the store's leases: lease table, ownership timeline, fleet (read-only unless --admin-token)",
    )
    .option(
      '--store <url>',
      'store URL (default: $LEASEHOLD_STORE, else sqlite:./leasehold.db); see "leasehold --help" for schemes',
    )
    .option(
      '--port <n>',
      'TCP port to serve on; 0 picks a free one',
      integerOption(0, 65535),
      DASHBOARD_DEFAULTS.port,
    )
    .option(
      '--host <address>',
      'address to listen on; anything but loopback shows every lease to the network',
      DASHBOARD_DEFAULTS.host,
    )
    .addOption(
      new Option(
        '--poll <duration>',
        'time between two listings of the store (releases also arrive at once where the store can watch)',
      )
        .argParser(durationOption(100, 600_000))
        .default(DASHBOARD_DEFAULTS.pollMs, '1s'),
    )
    .option(
      '--admin-token <token>',
      'turn on force-release; each request must carry this token (default: $LEASEHOLD_ADMIN_TOKEN, else off)',
    )
    .addHelpText(
      'after',
      `
Examples:
  leasehold dashboard --store sqlite:./leasehold.db
  leasehold dashboard --store postgres://app@db:5432/app --port 8080 --poll 2s
  LEASEHOLD_ADMIN_TOKEN=$(openssl rand -hex 16) leasehold dashboard --store redis://127.0.0.1:6379

Stops on Ctrl-C (SIGINT) or SIGTERM.`,
    )
    .action((options: DashboardCliOptions) => {
      const url = storeUrl(options);
      const adminToken = options.adminToken ?? (process.env.LEASEHOLD_ADMIN_TOKEN || undefined);
      return withStore(url, async (store) => {
        const dashboard = await startDashboard({
          store,
          storeUrl: url,
          port: options.port,
          host: options.host,
          pollMs: options.poll,
          adminToken,
          log: (line) => process.stderr.write(`leasehold dashboard: ${line}\n`),
        }).catch((error: unknown) => {
          const code = (error as NodeJS.ErrnoException).code;
          if (code === 'EADDRINUSE')
            throw new CliFailure(`port ${options.port} is in use; choose another with --port`);
          if (code === 'EADDRNOTAVAIL')
            throw new CliFailure(`${visible(options.host)} is not an address of this machine`);
          throw error;
        });
        print(`leasehold dashboard: ${dashboard.url}`);
        print(
          `  store ${visible(redact(url))}, polling every ${formatDuration(options.poll)}${store.capabilities.watch ? ' + the store’s watch' : ''}; ${adminToken ? 'force-release on (needs the admin token)' : 'read-only'}; Ctrl-C stops`,
        );
        if (!isLoopback(options.host)) {
          process.stderr.write(
            `leasehold dashboard: listening on ${visible(options.host)}: every lease is visible to whoever reaches it\n`,
          );
        }
        await untilSignal();
        await dashboard.close();
      });
    });
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}
