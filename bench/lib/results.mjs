// The results of `npm run bench`: the machine and versions they were measured on, every row as
// JSON, and the Markdown tables people read (markdown.mjs).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { toMarkdown } from './markdown.mjs';
import { packageVersion } from './servers.mjs';

const PACKAGES = [
  'better-sqlite3',
  'pg',
  'mysql2',
  'ioredis',
  'etcd3',
  '@aws-sdk/client-dynamodb',
  'dynalite',
  '@aws-sdk/client-s3',
  'node-zookeeper-client',
  'redlock',
  'redis-semaphore',
  'dynamodb-lock-client',
  'aws-sdk',
];

export function machineInfo() {
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? null,
    memoryMB: Math.round(totalmem() / 2 ** 20),
    os: `${process.platform} ${release()}`,
    node: process.version,
    loadavg: loadavg().map((l) => Math.round(l * 100) / 100),
  };
}

/** The leasehold build measured (version, and the commit when it is this repository's dist). */
export function libraryInfo(dist) {
  const home = resolve(dist, '..');
  const git = (...args) => {
    try {
      return execFileSync('git', args, {
        cwd: home,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    } catch {
      return null;
    }
  };
  let version = null;
  try {
    version = JSON.parse(readFileSync(join(home, 'package.json'), 'utf8')).version;
  } catch {
    // a build without its package.json
  }
  const status = git('status', '--porcelain', 'src');
  return {
    version,
    commit: git('rev-parse', '--short', 'HEAD'),
    srcModified: status === null ? null : status.length > 0,
    dist,
    packages: Object.fromEntries(PACKAGES.map((p) => [p, packageVersion(p)])),
  };
}

/** Writes latest.json and latest.md under `out`; answers the files and the Markdown. */
export function writeResults(result, out) {
  mkdirSync(out, { recursive: true });
  const markdown = toMarkdown(result);
  const files = [join(out, 'latest.json'), join(out, 'latest.md')];
  writeFileSync(files[0], `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(files[1], markdown);
  return { files, markdown };
}
