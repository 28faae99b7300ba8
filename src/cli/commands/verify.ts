import { Option, type Command } from 'commander';
import { durationOption } from '../duration.js';
import { integerOption } from '../numbers.js';
import { CliFailure, printJson } from '../output.js';
import { terminalSafe } from '../escape.js';
import { requireShared } from '../store.js';
import { driftBeyondText, parseDriftRate } from '../verify/drift.js';
import { DEFAULT_FAULTS, parseFaults, type FaultName } from '../verify/faults.js';
import { runVerify } from '../verify/run-verify.js';
import { privateServerScheme } from '../verify/private-servers.js';
import { checkText } from '../verify/verdict-text.js';
import { runLab } from '../verify/lab-command.js';

interface VerifyFlags {
  store?: string;
  duration: number;
  workers: number;
  resources: number;
  permits: number;
  faults: FaultName[];
  seed?: number;
  report?: string;
  ttl: number;
  skew?: number;
  drift?: number;
  json?: boolean;
}

export function registerVerify(program: Command): void {
  program
    .command('verify')
    .description(
      'a bounded chaos run on your store: worker processes, fenced writes, injected faults, a checked history',
    )
    .requiredOption(
      '--store <url>',
      'the store to verify: a URL every worker process can open, redis, postgres or etcd alone for a private server verify starts, pauses and restarts, or lab:SETUP for a replicated store in network namespaces of its own (root; SETUP: etcd, zookeeper, nats, redis, redis-sentinel, postgres-async, postgres-sync)',
    )
    .addOption(
      new Option('--duration <duration>', 'how long faults are injected')
        .argParser(durationOption(2000, 3_600_000))
        .default(60_000, '60s'),
    )
    .option('--workers <n>', 'worker processes', integerOption(2, 32), 5)
    .option('--resources <n>', 'resources the workers share', integerOption(1, 1000), 20)
    .option(
      '--permits <n>',
      'a counting lease of N permits per resource: every worker contends for every resource, holds a permit a while and gives it back; the checker fails on more than N owners of one resource at once',
      integerOption(1, 64),
      1,
    )
    .option(
      '--faults <list>',
      'faults to inject: kill, stop, pause, stall, skew, drift, store-pause, store-restart (those two only on a private server: --store redis|postgres|etcd), partition-leader, partition-holder, kill-leader, failover (those four only in a lab: --store lab:SETUP)',
      parseFaults,
      parseFaults(DEFAULT_FAULTS),
    )
    .option(
      '--seed <n>',
      'seed of the fault schedule (default: random, printed)',
      integerOption(0, 2 ** 31 - 1),
    )
    .option('--report <dir>', 'folder for history.jsonl and report.html (default: a temp folder)')
    .addOption(
      new Option('--ttl <duration>', 'lease TTL (heartbeat TTL/4, reconcile TTL/2)')
        .argParser(durationOption(500, 60_000))
        .default(2000, '2s'),
    )
    .option(
      '--skew <duration>',
      "largest clock offset between two workers with the skew fault (default: the store's maxClockSkewMs)",
      durationOption(0, 3_600_000),
    )
    .option(
      '--drift <rate>',
      "the rate of the odd-numbered workers' clocks, from -50% (slow) to +50% (fast), e.g. 0.5% or -3%; adds the drift fault (default: -1%)",
      parseDriftRate,
    )
    .option('--json', 'print the findings as JSON')
    .addHelpText(
      'after',
      `
Exit codes: 0 safe, 1 a safety violation, 2 could not run (bad input, store unreachable).
A SAFE verdict means no violation was seen in this run; it proves nothing about runs not made.

Examples:
  leasehold verify --store postgres://app:pw@db:5432/app --duration 60s --report ./verify-out
  leasehold verify --store redis --faults kill,pause,store-pause,store-restart   # a private Redis
  leasehold verify --store sqlite:/tmp/v.db --permits 3 --resources 4   # at most 3 owners per resource
  leasehold verify --store sqlite:/tmp/v.db --skew 4s --seed 7   # skew beyond the bound: fencing must hold
  leasehold verify --store sqlite:/tmp/v.db --drift=-20% --ttl 1s   # clocks 20 % slow: fencing must hold
  leasehold verify --store lab:etcd --faults partition-leader,kill-leader   # as root: 3 members, links cut`,
    )
    .action(async (flags: VerifyFlags, command: Command) => {
      const seed = flags.seed ?? Math.floor(Math.random() * 2 ** 31);
      if (flags.store!.startsWith('lab:')) {
        if (flags.permits !== 1 || flags.skew !== undefined || flags.drift !== undefined)
          throw new CliFailure('--permits, --skew and --drift do not apply to a lab run', 2);
        await runLab(flags.store!.slice(4), {
          durationMs: flags.duration,
          workers: flags.workers,
          resources: flags.resources,
          faults: flags.faults,
          seed,
          ttlMs: flags.ttl,
          ...(flags.report === undefined ? {} : { reportDir: flags.report }),
          json: flags.json === true,
        });
        return;
      }
      const store = requireShared(
        flags.store!,
        "verify's worker processes need a store they share",
      );
      privateServerScheme(store); // a bare word it cannot start a server for: exit 2 now
      if (flags.permits === 1 && flags.resources < flags.workers)
        throw new CliFailure(
          `--resources (${flags.resources}) must be at least --workers (${flags.workers})`,
          2,
        );
      const outcome = await runVerify({
        store,
        durationMs: flags.duration,
        workers: flags.workers,
        resources: flags.resources,
        permits: flags.permits,
        faults:
          flags.drift === undefined || flags.faults.includes('drift')
            ? flags.faults
            : [...flags.faults, 'drift'],
        seed,
        ttlMs: flags.ttl,
        ttlIsDefault: command.getOptionValueSource('ttl') === 'default',
        ...(flags.skew === undefined ? {} : { skewMs: flags.skew }),
        ...(flags.drift === undefined ? {} : { driftRate: flags.drift }),
        ...(flags.report === undefined ? {} : { reportDir: flags.report }),
        say: (line) => {
          if (!flags.json) process.stderr.write(`${line}\n`);
        },
      });
      const { result } = outcome;
      if (flags.json) {
        printJson({
          seed,
          history: outcome.history,
          report: outcome.report,
          skewBeyond: outcome.skewBeyond,
          driftBeyond: outcome.driftBeyond,
          notes: outcome.notes,
          ...result,
        });
      } else {
        const lines = [...outcome.notes.map((n) => `note: ${terminalSafe(n)}`)];
        if (outcome.skewBeyond)
          lines.push(
            `skew beyond the store's allowance (${outcome.run.skewMs} ms > maxClockSkewMs ${outcome.run.maxClockSkewMs} ms): overlapping beliefs are expected; the fence rejected ${result.writes.rejected} stale writes and accepted ${result.staleAccepted.length}`,
          );
        if (outcome.driftBeyond)
          lines.push(
            `drift beyond the allowance: ${driftBeyondText(outcome.run.driftRate ?? 0, outcome.run.ttlMs)}: overlapping beliefs are expected; the fence rejected ${result.writes.rejected} stale writes and accepted ${result.staleAccepted.length}`,
          );
        lines.push(
          `history: ${outcome.history}`,
          `report:  ${outcome.report}`,
          `seed:    ${seed} (rerun with --seed ${seed})`,
          checkText(result, outcome.run.startedAt),
        );
        process.stdout.write(`${lines.join('\n')}\n`);
      }
      if (!result.safe)
        throw new CliFailure('the safety check failed (see the report)', 1, { reported: true });
    });
}
