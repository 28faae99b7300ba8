// dynalite (the DynamoDB API, in memory) in its own process on a free 127.0.0.1 port, so the
// server's work neither shares the benchmark's event loop nor counts as its CPU time.
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { freePort, onCleanup, waitFor } from './processes.mjs';

const require = createRequire(import.meta.url);
const TIMINGS = ['--createTableMs', '0', '--deleteTableMs', '0', '--updateTableMs', '0'];

export async function startDynalite() {
  let lastError;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await launch(await freePort());
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

async function launch(port) {
  const cli = require.resolve('dynalite/cli.js');
  const child = fork(cli, ['--host', '127.0.0.1', '--port', String(port), ...TIMINGS], {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  const keep = (chunk) => (output = (output + chunk).slice(-4096));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const stop = onCleanup(() => child.exitCode === null && child.kill('SIGKILL'));
  try {
    await waitFor(`dynalite on port ${port}`, () => {
      if (child.exitCode !== null) throw new Error(`dynalite exited:\n${output}`);
      return output.includes('listening');
    });
  } catch (error) {
    stop();
    throw error;
  }
  const endpoint = `http://127.0.0.1:${port}`;
  return { endpoint, pid: child.pid, stop };
}
