// A private standalone ZooKeeper 3.8 on a free 127.0.0.1 port, as the tests' harness starts it
// (test/harness/zookeeper-server.ts), in plain JS for the benchmarks; its data on /dev/shm where
// there is one, so its transaction log's fsync measures ZooKeeper, not this machine's disk.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { clearTimeout } from 'node:timers';
import { freePort, onCleanup, tempDir, waitFor } from './processes.mjs';

/** The jars ZooKeeper 3.8's server needs, as the Debian package installs them. */
const JARS = [
  'zookeeper.jar',
  'zookeeper-jute.jar',
  'slf4j-api.jar',
  'slf4j-nop.jar',
  'netty-handler.jar',
  'netty-common.jar',
  'netty-buffer.jar',
  'netty-transport.jar',
  'netty-codec.jar',
  'netty-resolver.jar',
  'netty-transport-native-epoll.jar',
  'netty-transport-native-unix-common.jar',
  'metrics-core.jar',
  'commons-io.jar',
  'snappy-java.jar',
].map((jar) => `/usr/share/java/${jar}`);

/** Small heap, serial GC, no C2 compiler: a JVM that starts fast and stays modest on two cores. */
const JVM = ['-Xmx128m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1'];

export async function startZookeeper() {
  let lastError;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await launch(await freePort());
    } catch (error) {
      lastError = error; // most likely a port taken between choosing and binding it
    }
  }
  throw lastError;
}

async function launch(port) {
  const dir = tempDir('leasehold-bench-zk-', existsSync('/dev/shm') ? '/dev/shm' : undefined);
  const data = join(dir.path, 'data');
  mkdirSync(data);
  const config = join(dir.path, 'zoo.cfg');
  const settings = [
    'tickTime=200',
    `dataDir=${data}`,
    `clientPort=${port}`,
    'clientPortAddress=127.0.0.1',
    'admin.enableServer=false',
    'minSessionTimeout=400',
    'maxSessionTimeout=172800000',
    '4lw.commands.whitelist=ruok,srvr,stat',
    'maxClientCnxns=0',
  ];
  writeFileSync(config, `${settings.join('\n')}\n`);
  const main = 'org.apache.zookeeper.server.quorum.QuorumPeerMain';
  const child = spawn('java', [...JVM, '-cp', JARS.join(':'), main, config], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk) => (output = (output + chunk).slice(-4096));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const kill = onCleanup(() => child.exitCode === null && child.kill('SIGKILL'));
  const stop = () => {
    kill();
    dir.remove();
  };
  try {
    await waitFor(`zookeeper on port ${port}`, async () => {
      if (child.exitCode !== null) throw new Error(`zookeeper exited:\n${output}`);
      return /^Mode: /m.test(await fourLetter(port, 'srvr'));
    });
  } catch (error) {
    stop();
    throw error;
  }
  return { endpoint: `127.0.0.1:${port}`, port, pid: child.pid, stop };
}

/** Sends a four-letter-word command; the answer, or '' when the server does not answer. */
export function fourLetter(port, command, timeoutMs = 1000) {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let out = '';
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('connect', () => socket.write(command));
    socket.on('data', (chunk) => (out += chunk.toString()));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
  });
}
