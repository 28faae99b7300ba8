import type { Command } from 'commander';
import { redact } from '../../core/store-url.js';
import {
  checkIgnore,
  diagnoseStore,
  worstLevel,
  type Diagnosis,
  type Finding,
} from '../../core/doctor.js';
import { isLeaseError } from '../../core/errors.js';
import { terminalSafe } from '../escape.js';
import { CliFailure, print, printJson } from '../output.js';
import { storeUrl, withCommonOptions, withStore, type StoreOptions } from '../store.js';

/** Exit codes of `leasehold doctor`, beside the CLI's own (1 failed, 2 usage). */
export const DOCTOR_EXIT = Object.freeze({
  /** Nothing found. */
  clean: 0,
  /** Some finding can break exclusivity or fencing (`unsafe`). */
  unsafe: 3,
  /** Only findings that do not break exclusivity (`warning`, `unknown`). */
  findings: 4,
});

interface DoctorOptions extends StoreOptions {
  ignore?: string[];
}

export function registerDoctor(program: Command): void {
  withCommonOptions(
    program
      .command('doctor')
      .description(
        "read the store's own settings and say what in its setup can lose leases (restarts, crashes, power loss, failover) and what fixes it",
      )
      .option(
        '--ignore <id>',
        'leave out a finding you know and accept (repeatable), e.g. --ignore redis.no-persistence',
        (id: string, previous: string[] = []) => [...previous, id],
      )
      .addHelpText(
        'after',
        `
Levels: unsafe (an acknowledged lease can be lost: a second holder, or a token handed out again),
warning (leases stay exclusive; something else is weaker than it may look), unknown (the store
did not say; check by hand). The checks only read; opening the store does what any command's
open does (on MySQL and SQLite, the lease table is created when missing).

Exit codes: ${DOCTOR_EXIT.clean} nothing found, ${DOCTOR_EXIT.unsafe} a finding that can break exclusivity (unsafe), ${DOCTOR_EXIT.findings} other findings
only, 1 the store could not be read, 2 usage error.

Examples:
  leasehold doctor --store redis://127.0.0.1:6379
  leasehold doctor --store postgres://app@db/app --json
  leasehold doctor --store redis://cache:6379 --ignore redis.no-persistence || echo "exit $?"`,
      ),
  ).action((options: DoctorOptions) => {
    try {
      checkIgnore(options.ignore); // a misspelt id is a usage error, found before the store opens
    } catch (error) {
      if (isLeaseError(error)) throw new CliFailure(`--ignore: ${error.message}`, 2);
      throw error;
    }
    const url = storeUrl(options);
    return withStore(url, async (store) => {
      const diagnosis = await diagnoseStore(store, { ignore: options.ignore });
      const worst = worstLevel(diagnosis.findings);
      const exitCode =
        worst === undefined
          ? DOCTOR_EXIT.clean
          : worst === 'unsafe'
            ? DOCTOR_EXIT.unsafe
            : DOCTOR_EXIT.findings;
      if (options.json) {
        printJson({ store: redact(url), ...diagnosis, exitCode });
      } else {
        print(report(redact(url), diagnosis));
      }
      if (exitCode !== DOCTOR_EXIT.clean)
        throw new CliFailure(summary(diagnosis.findings), exitCode, { reported: true });
    });
  });
}

/** The human report: one block per finding, then what was read. */
function report(url: string, { findings, checked }: Diagnosis): string {
  const lines = [`store: ${url}`];
  if (findings.length === 0) lines.push('nothing found that can lose leases');
  for (const f of findings) {
    lines.push(
      '',
      `${f.level.toUpperCase().padEnd(8)} ${f.id}`,
      `  observed: ${terminalSafe(f.observed)}`,
      `  risk:     ${f.risk}`,
      `  fix:      ${f.fix}`,
    );
  }
  lines.push('', `checked: ${checked.map(terminalSafe).join('; ')}`);
  return lines.join('\n');
}

function summary(findings: readonly Finding[]): string {
  const count = (level: string): number => findings.filter((f) => f.level === level).length;
  const parts = (['unsafe', 'warning', 'unknown'] as const)
    .map((level) => [level, count(level)] as const)
    .filter(([, n]) => n > 0)
    .map(([level, n]) => `${n} ${level}`);
  return `doctor: ${findings.length} finding${findings.length === 1 ? '' : 's'} (${parts.join(', ')})`;
}
