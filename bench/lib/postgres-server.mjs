// A private PostgreSQL 15 on a free 127.0.0.1 port in a temp folder, as the tests' harness starts
// it (test/harness/postgres-server.ts), in plain JS for the benchmarks. PostgreSQL refuses to run
// as root, so as root the server runs as the `postgres` user, in a folder that user owns.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { appendFileSync, chownSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort, onCleanup, signalTree, tempDir, waitFor } from './processes.mjs';

const run = promisify(execFile);
const BIN = process.env.LEASEHOLD_PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** The uid/gid to run the server as, or `{}` when we are not root. */
function serverUser() {
  if (process.getuid?.() !== 0) return {};
  const id = (flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/**
 * Starts the server with room for `maxConnections` clients (a fleet of pools plus one LISTEN
 * connection per worker). fsync off by default: we measure the lease logic, not this machine's
 * disk; `durable: true` keeps the shipped settings (fsync, full_page_writes, synchronous_commit).
 */
export async function startPostgres({ maxConnections = 200, durable = false } = {}) {
  const user = serverUser();
  const dir = tempDir('leasehold-bench-pg-');
  if (user.uid !== undefined) chownSync(dir.path, user.uid, user.gid);
  const data = join(dir.path, 'data');
  await run(
    join(BIN, 'initdb'),
    ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'],
    user,
  );
  let lastError;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await launch({ data, dir, user, port: await freePort(), maxConnections, durable });
    } catch (error) {
      lastError = error;
    }
  }
  dir.remove();
  throw lastError;
}

async function launch({ data, dir, user, port, maxConnections, durable }) {
  const args = ['-D', data, '-p', String(port), '-k', dir.path, '-c', 'listen_addresses=127.0.0.1'];
  if (!durable) args.push('-c', 'fsync=off', '-c', 'full_page_writes=off');
  args.push('-c', `max_connections=${maxConnections}`, '-c', 'shared_buffers=64MB');
  // LEASEHOLD_BENCH_PG_LOG=FILE: the server's log there, with lock waits and slow statements.
  const logFile = process.env.LEASEHOLD_BENCH_PG_LOG;
  if (logFile) args.push('-c', 'log_lock_waits=on', '-c', 'log_min_duration_statement=1000');
  const child = spawn(join(BIN, 'postgres'), args, { stdio: ['ignore', 'pipe', 'pipe'], ...user });
  let output = '';
  const keep = (chunk) => {
    output = (output + chunk).slice(-16_384);
    if (logFile) appendFileSync(logFile, chunk);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  // Backends are their own process groups: kill the whole tree, not the group.
  const kill = onCleanup(() => child.exitCode === null && signalTree(child.pid, 'SIGKILL'));
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  try {
    await waitFor(`postgres on port ${port}`, async () => {
      if (child.exitCode !== null) throw new Error(`postgres exited:\n${output}`);
      return answers(url);
    });
  } catch (error) {
    kill();
    throw error;
  }
  const stop = () => {
    kill();
    dir.remove();
  };
  return { url, pid: child.pid, stop };
}

async function answers(url) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } finally {
    await client.end().catch(() => {});
  }
}
