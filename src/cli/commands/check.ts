import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { checkRecords } from '../harness/checker.js';
import { parseHistory, type RunRecord } from '../harness/history-format.js';
import { checkText } from '../verify/verdict-text.js';
import { CliFailure, printJson } from '../output.js';

export function registerCheck(program: Command): void {
  program
    .command('check')
    .description(
      'check a history recorded by leasehold verify: overlaps, token order, stale writes, liveness',
    )
    .argument('<history>', 'the history file (JSONL), e.g. REPORT_DIR/history.jsonl')
    .option('--json', 'print the findings as JSON')
    .addHelpText(
      'after',
      `
Exit codes: 0 safe, 1 a safety violation, 2 the file could not be read or parsed.

Examples:
  leasehold check ./verify-out/history.jsonl
  leasehold check history.jsonl --json`,
    )
    .action((file: string, options: { json?: boolean }) => {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (error) {
        throw new CliFailure(`cannot read ${file}: ${(error as Error).message}`, 2);
      }
      let records;
      try {
        records = parseHistory(text);
      } catch (error) {
        throw new CliFailure(`${file}: ${(error as Error).message}`, 2);
      }
      const result = checkRecords(records);
      if (options.json) printJson(result);
      else {
        const run = records.find((r): r is RunRecord => r.type === 'run');
        process.stdout.write(`${checkText(result, run?.startedAt ?? 0)}\n`);
      }
      if (!result.safe)
        throw new CliFailure('the history shows a safety violation (see above)', 1, {
          reported: true,
        });
    });
}
