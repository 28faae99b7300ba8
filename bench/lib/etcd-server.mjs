// A private single-member etcd on free 127.0.0.1 ports, with the tests' short raft timings
// (heartbeat 10 ms, election 100 ms) and its data on /dev/shm where there is one.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, onCleanup, signalTree, tempDir, waitFor } from './processes.mjs';

const { fetch, AbortSignal } = globalThis;

export async function startEtcd() {
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

async function launch(client, peer) {
  // etcd fsyncs every write: in memory, the benchmark measures etcd, not this machine's disk.
  const dir = tempDir('leasehold-bench-etcd-', existsSync('/dev/shm') ? '/dev/shm' : undefined);
  const args = ['--name', 'n1', '--data-dir', join(dir.path, 'data')];
  args.push('--listen-client-urls', `http://127.0.0.1:${client}`);
  args.push('--advertise-client-urls', `http://127.0.0.1:${client}`);
  args.push('--listen-peer-urls', `http://127.0.0.1:${peer}`);
  args.push('--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`);
  args.push('--initial-cluster', `n1=http://127.0.0.1:${peer}`, '--initial-cluster-state', 'new');
  args.push('--heartbeat-interval', '10', '--election-timeout', '100');
  args.push('--logger', 'zap', '--log-outputs', 'stderr', '--log-level', 'warn');
  const child = spawn('etcd', args, { stdio: 'ignore' });
  const kill = onCleanup(() => child.exitCode === null && signalTree(child.pid, 'SIGKILL'));
  const stop = () => {
    kill();
    dir.remove();
  };
  const endpoint = `127.0.0.1:${client}`;
  try {
    await waitFor(`etcd on port ${client}`, async () => {
      if (child.exitCode !== null) throw new Error(`etcd exited (${child.exitCode})`);
      const response = await fetch(`http://${endpoint}/health`, {
        signal: AbortSignal.timeout(500),
      });
      return (await response.json()).health === 'true';
    });
  } catch (error) {
    stop();
    throw error;
  }
  return { endpoint, url: `etcd://${endpoint}`, pid: child.pid, stop };
}
