import { RunData } from '../run/run-data.js';
import { Option, type Command } from 'commander';
import { LeaseClient, LIMITS, systemClock, type LeaseStore } from '../../index.js';
import { durationOption } from '../duration.js';
import { integerOption } from '../numbers.js';
import { acquireForRun } from '../run/acquire-for-run.js';
import { RUN_EXIT } from '../run/exit-codes.js';
import { SignalRelay } from '../run/signal-relay.js';
import { supervise } from '../run/supervise.js';
import { waitOption } from '../run/wait-option.js';
import { requireShared, storeUrl, withStore } from '../store.js';
import { quoted, terminalSafe } from '../escape.js';

interface RunOptions {
  store?: string;
  owner?: string;
  ttl: number;
  wait: number;
  grace: number;
  foreground?: boolean;
  permits: number;
  fair?: boolean;
}

const HELP = `
The command runs without a shell, in a session and process group of its own, while this process
renews the lease. It gets LEASEHOLD_RESOURCE, LEASEHOLD_OWNER and LEASEHOLD_TOKEN, the fencing
token: pass the token with every write so the target can refuse a holder that lost the lease.
With --permits N it holds one of N permits (LEASEHOLD_PERMIT, 0 … N−1; tokens rise per permit),
so at most N commands run at once under one name, on any host.
On a store that keeps lease data, LEASEHOLD_DATA_FILE names a file holding what the previous
holder left (also in LEASEHOLD_DATA when it is text); what the command leaves there is written
back under the token, on each renewal when it changed and with the release: a job resumes where
its last run stopped.
SIGTERM, SIGINT and SIGHUP sent to leasehold go to the command; when it exits the lease is released.

If the lease is lost (renewals failed until its deadline, or the store shows another owner), the
command gets SIGTERM at once and SIGKILL after --grace, counted from the lease's deadline if that
has already passed. The command may thus run up to the grace without the lease, while another
holder may already be at work: only the token makes that safe.

Ctrl-Z (SIGTSTP, or SIGTTIN) stops the command with SIGSTOP, then leasehold. Nothing renews the
lease while stopped. When leasehold is continued (fg, bg, SIGCONT) it continues the command only if
the lease is still valid; if the deadline passed meanwhile it kills the stopped command with
SIGKILL, without letting it run again, and exits ${RUN_EXIT.lost}.

What no process can do: SIGKILL and SIGSTOP cannot be caught. If leasehold is killed with SIGKILL,
the command, in its own session, gets no signal and keeps running, unsupervised, even once the
lease has lapsed at its TTL and another owner holds it. If leasehold is stopped with SIGSTOP (or
by the terminal with SIGTTOU, for writing from the background under "stty tostop"), the command
keeps running while nothing renews the lease; continued past the deadline, leasehold stops the
command at once (SIGKILL straight away if the grace is spent). Where that matters, run leasehold so that its end ends the command too: a
systemd service kills what is left of its control group when its main process dies.

The command's own session has no controlling terminal, so /dev/tty prompts (ssh, sudo, git
passwords) fail. --foreground runs it in leasehold's process group and session instead: it keeps
the terminal, and Ctrl-C and Ctrl-Z reach it directly from the terminal (leasehold does not send it
a second SIGINT). The price: leasehold then signals the command and the descendants it finds
through their parent links, not a whole group, so a process that detaches at once (double fork,
setsid) escapes a stop; and "fg" after Ctrl-Z continues the command together with leasehold, so if
the lease lapsed meanwhile the command may run for an instant before it is killed.

Exit codes: the command's own (128+N if signal N ended it); ${RUN_EXIT.unavailable} the lease was held by another
owner until --wait ran out; ${RUN_EXIT.lost} the lease was lost while the command ran; ${RUN_EXIT.notFound} command not found;
${RUN_EXIT.cannotRun} command could not be started; 1 store error; 2 usage error; 128+N signal N while waiting.

Examples:
  leasehold run nightly-report --wait 0 -- ./report.sh    # cron: skip (exit ${RUN_EXIT.unavailable}) if another host runs it
  leasehold run db-migrate --wait 5m --ttl 30s -- npm run migrate
  leasehold run deploy --foreground -- ./deploy.sh        # asks for an ssh passphrase
  leasehold run vendor-api --permits 5 -- ./call-api.sh   # at most 5 at once, fleet-wide`;

export function registerRun(program: Command): void {
  program
    .command('run')
    .usage('<resource> [options] -- <command> [args...]')
    .description('run a command while holding a lease; stop it if the lease is lost')
    .argument('<resource>', 'the resource name')
    .argument('[command...]', 'the command and its arguments, after "--"')
    .option(
      '--store <url>',
      'store URL (default: $LEASEHOLD_STORE, else sqlite:./leasehold.db); see "leasehold --help"',
    )
    .option('--owner <id>', 'who holds the lease (default: <hostname>:<pid>:<random>)')
    .addOption(
      new Option(
        '--ttl <duration>',
        'how long the lease lasts without a renewal (renewed every ttl/4)',
      )
        .argParser(durationOption(LIMITS.ttlMinMs, LIMITS.ttlMaxMs))
        .default(20_000, '20s'),
    )
    .addOption(
      new Option('--wait <duration>', 'how long to wait for the lease; 0 tries once')
        .argParser(waitOption)
        .default(Infinity, 'forever'),
    )
    .addOption(
      new Option('--grace <duration>', 'time between SIGTERM and SIGKILL once the lease is lost')
        .argParser(durationOption(0, LIMITS.ttlMaxMs))
        .default(10_000, '10s'),
    )
    .addOption(
      new Option(
        '--permits <n>',
        'hold one of n permits of the resource: at most n commands run at once across the fleet',
      )
        .argParser(integerOption(1, LIMITS.permitsMax))
        .default(1),
    )
    .option('--fair', 'wait in line: waiters are served in arrival order')
    .option(
      '--foreground',
      "run the command in leasehold's process group and session, keeping the terminal (see below)",
    )
    .addHelpText('after', HELP)
    .action(async (resource: string, words: string[], options: RunOptions, command: Command) => {
      const argv = commandAfterDashes(command, words);
      const code = await withStore(
        requireShared(
          storeUrl(options),
          '`leasehold run` excludes other processes only through a store they share',
        ),
        (store) => runUnderLease(store, resource, argv, options),
      );
      // The command's exit code is ours; nothing is left to flush (stdout and stderr are the command's or written synchronously).
      process.exit(code);
    });
}

async function runUnderLease(
  store: LeaseStore,
  resource: string,
  argv: string[],
  options: RunOptions,
): Promise<number> {
  const say = (line: string): void => void process.stderr.write(`${terminalSafe(line)}\n`);
  const signals = new SignalRelay();
  let data: RunData | undefined;
  const client = new LeaseClient({
    store,
    owner: options.owner,
    ttlMs: options.ttl,
    clock: systemClock,
  });
  try {
    const held = await acquireForRun(client, store, resource, options.wait, signals, {
      permits: options.permits,
      fair: options.fair === true,
    });
    held.on('at-risk', (reason) =>
      say(`leasehold: warning: lease on ${quoted(resource)} at risk: ${reason}`),
    );
    data = RunData.for(held, store, say);
    const file = data;
    if (file) held.on('renewed', () => void file.sync());
    const outcome = await supervise(held, {
      argv,
      graceMs: options.grace,
      foreground: options.foreground === true,
      signals,
      clock: systemClock,
      say,
      env: data?.env() ?? {},
    });
    // What the command left in the file goes with the release, in the same call.
    const last = outcome.lost ? undefined : data?.final();
    if (last !== undefined && held.isValid())
      await held
        .release({ data: last })
        .catch((error: unknown) =>
          say(
            `leasehold: warning: the lease data was not written with the release: ${error instanceof Error ? error.message : String(error)}`,
          ),
        );
    return outcome.code;
  } finally {
    data?.dispose();
    // Releases what is still held, in one bounded attempt. If that fails the lease lapses at its
    // TTL, which is no reason to hide the command's exit code.
    await client
      .close()
      .catch((error: unknown) =>
        say(
          `leasehold: warning: release failed, the lease lapses at its TTL: ${error instanceof Error ? error.message : String(error)}`,
        ),
      );
    signals.dispose();
  }
}

/** The command after `--`; a usage error (exit 2) when there is no `--`, nothing after it, or extra words before it. */
function commandAfterDashes(command: Command, words: string[]): string[] {
  const raw = (command.parent as { rawArgs?: string[] } | null)?.rawArgs ?? process.argv;
  const dashes = raw.indexOf('--');
  const after = dashes === -1 ? [] : raw.slice(dashes + 1);
  if (dashes === -1 || after.length === 0)
    command.error(
      'error: put the command after "--", e.g. leasehold run my-job -- ./job.sh --flag',
      {
        code: 'leasehold.usage',
        exitCode: 2,
      },
    );
  if (words.length !== after.length)
    command.error(`error: unexpected argument ${JSON.stringify(words[0])} before "--"`, {
      code: 'leasehold.usage',
      exitCode: 2,
    });
  return after;
}
