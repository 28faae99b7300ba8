#!/usr/bin/env node
import { createRequire } from 'node:module';
import { Command, CommanderError } from 'commander';
import { ErrorCode, isLeaseError, knownSchemes } from '../index.js';
import { registerAcquire } from './commands/acquire.js';
import { registerCheck } from './commands/check.js';
import { registerDashboard } from './commands/dashboard.js';
import { registerDemo } from './commands/demo.js';
import { registerDoctor } from './commands/doctor.js';
import { registerGet } from './commands/get.js';
import { registerInit } from './commands/init.js';
import { registerList } from './commands/list.js';
import { registerRelease } from './commands/release.js';
import { registerRun } from './commands/run.js';
import { registerTour } from './commands/tour.js';
import { registerVerify } from './commands/verify.js';
import { registerWatch } from './commands/watch.js';
import { CliFailure, errorLine, scrubPassword } from './output.js';
import { RUN_EXIT } from './run/exit-codes.js';
import { checkOpenedStore } from './store.js';
import { checkTtlFits } from './ttl-fit.js';

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

/** The `leasehold` program. Commander errors are thrown (exitOverride), so `run` decides exit codes. */
function buildProgram(): Command {
  const program = new Command('leasehold')
    .description('Distributed leases with fencing tokens on the store you already run')
    .version(version, '-V, --version', 'print the version')
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText(
      'after',
      `
Store URLs (--store, else $LEASEHOLD_STORE, else sqlite:./leasehold.db):
  schemes: ${knownSchemes()
    .map((s) => `${s}:`)
    .join(' ')}
  e.g. sqlite:./leasehold.db  postgres://user:pass@host:5432/db  redis://127.0.0.1:6379

Durations take a unit: 500ms, 20s, 1.5s, 2m, 1h.
Exit codes: 0 ok, 1 the operation failed (store unreachable, not found, not yours, ...), 2 usage
error, 75 the lease is held by another owner (acquire and run, after --wait). With --json an error
is also written to stdout as {"error": {"code", "message", "exitCode"}}.`,
    );
  // A --ttl must leave room for the clock-skew allowance of the store, known once it is open:
  // withStore checks it (`demo`, which opens its store elsewhere, checks its own).
  program.hook('preAction', (_program, command) => {
    const ttl: unknown = command.getOptionValue('ttl');
    if (typeof ttl !== 'number') return;
    const isDefault = command.getOptionValueSource('ttl') === 'default';
    checkOpenedStore((store) => checkTtlFits({ ms: ttl, isDefault }, store));
  });
  registerInit(program);
  registerList(program);
  registerGet(program);
  registerAcquire(program);
  registerRelease(program);
  registerRun(program);
  registerDemo(program);
  registerTour(program);
  registerVerify(program);
  registerCheck(program);
  registerDoctor(program);
  registerWatch(program);
  registerDashboard(program);
  return program;
}

/** Runs the CLI on `argv` and returns the exit code. */
async function run(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (error) {
    // Commander has already printed its message (and the usage hint) for its own errors.
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    const url = program.args.length > 0 ? storeUrlOf(program) : undefined;
    const line = scrubPassword(errorLine(error), url);
    process.stderr.write(`${line}\n`);
    const code = exitCodeOf(error);
    const reported = error instanceof CliFailure && error.reported;
    if (!reported && commandOf(program)?.opts<{ json?: boolean }>().json === true)
      process.stdout.write(`${JSON.stringify({ error: errorJson(error, line, code) })}\n`);
    return code;
  }
}

/** 75 (EX_TEMPFAIL, as `run` uses) when another owner holds the lease; else 1 or the failure's own. */
function exitCodeOf(error: unknown): number {
  if (error instanceof CliFailure) return error.exitCode;
  return isLeaseError(error, ErrorCode.LEASE_UNAVAILABLE) ? RUN_EXIT.unavailable : 1;
}

/** A failure for `--json` readers: the error code where there is one, and the message as printed. */
function errorJson(error: unknown, line: string, exitCode: number): object {
  const code = isLeaseError(error) ? error.code : error instanceof CliFailure ? 'FAILED' : 'ERROR';
  const message = line.replace(/^leasehold: /, '').replace(`${code}: `, '');
  return { code, message, exitCode };
}

function commandOf(program: Command): Command | undefined {
  return program.commands.find((c) => c.name() === program.args[0]);
}

/** The store URL the command that ran was given, for scrubbing a password from messages. */
function storeUrlOf(program: Command): string | undefined {
  const command = commandOf(program);
  // The default URL holds no password (and resolving it again could throw), so it is not needed.
  const options = command?.opts<{ store?: string }>();
  return options ? (options.store ?? process.env.LEASEHOLD_STORE) : undefined;
}

// A reader that goes away (`leasehold list | head`) is not an error worth a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(process.exitCode ?? 0);
});

process.exitCode = await run(process.argv);
