// A private redis-server on a free 127.0.0.1 port in a temp folder, no persistence, as the tests'
// harness starts it (test/harness/redis-server.ts), in plain JS for the benchmarks.
import { spawn } from 'node:child_process';
import { freePort, onCleanup, signalTree, tempDir, waitFor } from './processes.mjs';

export async function startRedis() {
  let lastError;
  // The free port can be taken between our probe and the server's bind: retry on a fresh one.
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
  const dir = tempDir('leasehold-bench-redis-');
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir.path];
  args.push('--save', '', '--appendonly', 'no', '--protected-mode', 'no');
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk) => (output = (output + chunk).slice(-16_384));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const kill = onCleanup(() => child.exitCode === null && signalTree(child.pid, 'SIGKILL'));
  const stop = () => {
    kill();
    dir.remove();
  };
  try {
    await waitFor(`redis-server on port ${port}`, () => {
      if (child.exitCode !== null) throw new Error(`redis-server exited:\n${output}`);
      return output.includes('Ready to accept connections');
    });
  } catch (error) {
    stop();
    throw error;
  }
  return { url: `redis://127.0.0.1:${port}`, pid: child.pid, stop };
}
