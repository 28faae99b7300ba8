// A private Ceph on free 127.0.0.1 ports, as the tests' harness starts it
// (test/harness/ceph-server.ts), in plain JS for the benchmarks: one monitor, one memstore OSD
// (objects in memory), one radosgw (the S3 endpoint, the only S3 server here that honours
// If-None-Match / If-Match on PUT) and an S3 user. A failed bootstrap is retried on fresh ports.
import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cephConf } from './ceph-conf.mjs';
import { freePort, onCleanup, tempDir, waitFor } from './processes.mjs';

const run = promisify(execFile);
const { fetch, AbortSignal } = globalThis;

/** The S3 user every private Ceph gets. */
export const CEPH_S3_USER = Object.freeze({
  accessKeyId: 'leasehold-bench',
  secretAccessKey: 'leasehold-bench-secret',
});

export async function startCeph() {
  let lastError;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await launch();
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

async function launch() {
  const dir = tempDir('leasehold-bench-ceph-');
  for (const sub of ['mon', 'osd0', 'run', 'log', 'rgw', 'crash']) mkdirSync(join(dir.path, sub));
  const monPort = await freePort();
  let rgwPort = await freePort();
  while (rgwPort === monPort) rgwPort = await freePort();
  const conf = join(dir.path, 'ceph.conf');
  writeFileSync(conf, cephConf(dir.path, monPort, rgwPort));
  const c = ['-c', conf];
  const pids = join(dir.path, 'daemons.pids');
  startWatchdog(dir.path, pids);
  const daemons = [];
  const kill = onCleanup(() => {
    for (const d of daemons) if (d.exitCode === null) d.kill('SIGKILL');
  });
  const stop = () => {
    kill();
    dir.remove();
  };
  const daemon = async (command, args, ready) => {
    const child = spawn(command, [...c, ...args, '-f'], { stdio: ['ignore', 'ignore', 'pipe'] });
    daemons.push(child);
    appendFileSync(pids, `${child.pid}\n`);
    let output = '';
    child.stderr.on('data', (chunk) => (output = (output + chunk).slice(-4096)));
    await waitFor(
      `${command} to be ready`,
      () => {
        if (child.exitCode !== null) throw new Error(`${command} exited:\n${output}`);
        return ready();
      },
      30_000,
      100,
    );
    return child;
  };
  const ceph = (...args) =>
    run('ceph', [...c, '--connect-timeout', '2', ...args], { timeout: 5000 });
  try {
    const monmap = join(dir.path, 'monmap');
    const { stdout: fsid } = await run('ceph-conf', [...c, '--lookup', 'fsid']);
    await run('ceph-authtool', [
      ...['--create-keyring', join(dir.path, 'keyring')],
      ...['--gen-key', '-n', 'mon.', '--cap', 'mon', 'allow *'],
    ]);
    await run('monmaptool', [
      ...['--create', '--add', 'a', `v2:127.0.0.1:${monPort}`, '--fsid', fsid.trim(), monmap],
    ]);
    await run('ceph-mon', [...c, '--mkfs', '-i', 'a', '--monmap', monmap]);
    const mon = await daemon('ceph-mon', ['-i', 'a'], async () =>
      Boolean(await ceph('mon', 'stat')),
    );
    const uuid = randomUUID();
    await run('ceph', [...c, '--connect-timeout', '5', 'osd', 'new', uuid], { timeout: 10_000 });
    await run('ceph-osd', [...c, '-i', '0', '--mkfs', '--osd-uuid', uuid], { timeout: 20_000 });
    const osd = await daemon('ceph-osd', ['-i', '0'], async () =>
      /1 up/.test((await ceph('osd', 'stat')).stdout),
    );
    const rgw = await daemon('radosgw', ['-n', 'client.rgw'], async () => {
      const response = await fetch(`http://127.0.0.1:${rgwPort}/`, {
        signal: AbortSignal.timeout(1000),
      });
      await response.arrayBuffer();
      return response.status < 500;
    });
    await run(
      'radosgw-admin',
      [
        ...c,
        ...['user', 'create', '--uid', 'leasehold', '--display-name', 'leasehold'],
        ...['--access-key', CEPH_S3_USER.accessKeyId, '--secret', CEPH_S3_USER.secretAccessKey],
      ],
      { timeout: 20_000 },
    );
    // The CPU a request costs is spent in radosgw and the OSD (and a little in the monitor).
    const endpoint = `http://127.0.0.1:${rgwPort}`;
    return { endpoint, pid: [rgw.pid, osd.pid, mon.pid], stop };
  } catch (error) {
    stop();
    throw error;
  }
}

/**
 * A detached shell that SIGKILLs the daemons listed in `pidFile` if this process dies without
 * its cleanup (SIGKILL), and exits by itself once the cluster's folder is removed by `stop`.
 */
function startWatchdog(dir, pidFile) {
  const script =
    `while kill -0 ${process.pid} 2>/dev/null && [ -d '${dir}' ]; do sleep 1; done; ` +
    `[ -d '${dir}' ] && for p in $(cat '${pidFile}' 2>/dev/null); do ` +
    // Only a process still running this cluster's configuration: pids get reused.
    `grep -qs '${dir}' /proc/$p/cmdline && kill -9 "$p" 2>/dev/null; done; ` +
    `rm -rf '${dir}'`;
  spawn('sh', ['-c', script], { detached: true, stdio: 'ignore' }).unref();
}
