// A private nats-server with JetStream on free 127.0.0.1 ports (client and monitoring), its store
// in a temp folder, as the tests' harness starts it (test/harness/nats-server.ts), for the bench.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePort, onCleanup, signalTree, tempDir, waitFor } from './processes.mjs';

const { fetch, AbortSignal } = globalThis;

export async function startNats() {
  let lastError;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await launch(await freePort(), await freePort());
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

async function launch(port, monitor) {
  const dir = tempDir('leasehold-bench-nats-');
  const args = ['-a', '127.0.0.1', '-p', String(port), '-m', String(monitor)];
  args.push('-js', '-sd', join(dir.path, 'js'));
  const child = spawn('nats-server', args, { stdio: 'ignore' });
  const kill = onCleanup(() => child.exitCode === null && signalTree(child.pid, 'SIGKILL'));
  const stop = () => {
    kill();
    dir.remove();
  };
  const monitoring = `http://127.0.0.1:${monitor}`;
  try {
    await waitFor(`nats-server on port ${port}`, async () => {
      if (child.exitCode !== null) throw new Error(`nats-server exited (${child.exitCode})`);
      const response = await fetch(`${monitoring}/healthz?js-enabled-only=true`, {
        signal: AbortSignal.timeout(500),
      });
      return response.ok;
    });
  } catch (error) {
    stop();
    throw error;
  }
  return { url: `nats://127.0.0.1:${port}`, port, monitoring, pid: child.pid, stop };
}
