// A private MariaDB on a free 127.0.0.1 port in a temp folder, durable as shipped
// (innodb_flush_log_at_trx_commit=1, doublewrite on, no binary log), with one database `bench`.
// Root with no password over TCP; `--user=root` because the benchmarks may run as root.
import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import mysql from 'mysql2/promise';
import { freePort, onCleanup, signalTree, tempDir, waitFor } from './processes.mjs';

const run = promisify(execFile);
export const DATABASE = 'bench';

export async function startMariadb({ maxConnections = 200 } = {}) {
  const dir = tempDir('leasehold-bench-mariadb-');
  const data = join(dir.path, 'data');
  const install = ['--no-defaults', `--datadir=${data}`, '--user=root'];
  install.push('--auth-root-authentication-method=normal', '--skip-test-db');
  try {
    await run('mariadb-install-db', install);
  } catch (error) {
    dir.remove();
    throw error;
  }
  let lastError;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await launch({ dir, data, port: await freePort(), maxConnections });
    } catch (error) {
      lastError = error; // most likely the port was taken between the probe and the bind
    }
  }
  dir.remove();
  throw lastError;
}

async function launch({ dir, data, port, maxConnections }) {
  const args = ['--no-defaults', `--datadir=${data}`, '--user=root', '--bind-address=127.0.0.1'];
  args.push(`--port=${port}`, `--socket=${join(dir.path, 'sock')}`);
  args.push(`--pid-file=${join(dir.path, 'pid')}`, `--log-error=${join(dir.path, 'err.log')}`);
  args.push('--skip-name-resolve', `--max-connections=${maxConnections}`);
  const child = spawn('mariadbd', args, { stdio: 'ignore' });
  const kill = onCleanup(() => child.exitCode === null && signalTree(child.pid, 'SIGKILL'));
  try {
    await waitFor(`mariadbd on port ${port}`, async () => {
      if (child.exitCode !== null) throw new Error(`mariadbd exited (${child.exitCode})`);
      const c = await mysql.createConnection({ host: '127.0.0.1', port, user: 'root' });
      try {
        await c.query(`CREATE DATABASE IF NOT EXISTS ${DATABASE}`);
      } finally {
        await c.end();
      }
      return true;
    });
  } catch (error) {
    kill();
    throw error;
  }
  const stop = () => {
    kill();
    dir.remove();
  };
  return { port, url: `mysql://root@127.0.0.1:${port}/${DATABASE}`, pid: child.pid, stop };
}
