// The lab's own process (`runJepsenInLab`): runs in a network namespace of its own, takes the
// run's options as JSON in argv[2], prints the summary as JSON on stdout, progress on stderr.
import { runJepsen, type JepsenOptions } from './jepsen.js';

const options = JSON.parse(process.argv[2] ?? '{}') as JepsenOptions;
runJepsen(options, (line) => process.stderr.write(`${line}\n`)).then(
  (summary) => process.stdout.write(`${JSON.stringify(summary)}\n`),
  (error: unknown) => {
    const text = error instanceof Error ? error.message : String(error);
    process.stderr.write(`jepsen-error: ${text.replace(/\n/g, ' ')}\n`);
    process.exitCode = 2;
  },
);
