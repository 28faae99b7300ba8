// leasehold's benchmarks in one run, the comparison to read: per store, one transition beside the
// store's bare compare-and-set and the peers on that store; renewMany of many leases; failover
// across processes; stop() with many leases held; the lease family (permits beside the exclusive
// lease and redis-semaphore, acquireAll groups by size, fair against non-fair waiting on one hot
// lease); SQLite's event-loop stalls. Starts a private
// server per store on free 127.0.0.1 ports and removes it (and every child) on every way out.
// Writes bench/results/latest.json (every row, the machine, the versions) and latest.md.
// Usage: npm run bench [-- --quick] [--stores sqlite,redis] [--only transition,permits] (--help)
import { loadLibrary } from './lib/library.mjs';
import { installCleanupHandlers } from './lib/processes.mjs';
import { machineInfo, libraryInfo, writeResults } from './lib/results.mjs';
import { parseRunOptions } from './lib/run-options.mjs';
import { SECTION_RUNNERS } from './lib/sections/index.mjs';
import { DRIVERS, packageVersion, startServer } from './lib/servers.mjs';

const options = parseRunOptions(process.argv.slice(2));
installCleanupHandlers();
const libs = [{ name: 'leasehold', dist: options.dist, lib: await loadLibrary(options.dist) }];
if (options.baselineDist) {
  const dist = options.baselineDist;
  libs.push({ name: 'baseline', dist, lib: await loadLibrary(dist) });
}
const started = performance.now();

const result = {
  startedAt: new Date().toISOString(),
  options,
  machine: machineInfo(),
  library: libraryInfo(options.dist),
  stores: {},
  rows: [],
  errors: [],
};

for (const store of options.stores) {
  const log = (section) => (line) => console.error(`[bench] ${store} ${section}: ${line}`);
  const facts = { driver: `${DRIVERS[store]} ${packageVersion(DRIVERS[store]) ?? '?'}` };
  result.stores[store] = facts;
  let server;
  try {
    server = await startServer(store);
    Object.assign(facts, await server.facts());
    log('server')(`${facts.server ?? '?'} (${facts.settings ?? ''}), ${facts.driver}`);
  } catch (error) {
    log('server')(`did not start: ${error.stack ?? error}`);
    result.errors.push({ store, section: 'server', error: String(error.message ?? error) });
    continue;
  }
  try {
    for (const section of options.sections) {
      const runner = SECTION_RUNNERS[section];
      if (!runner.appliesTo(store, options.quick)) continue;
      const t0 = performance.now();
      try {
        const rows = await runner.run({
          store,
          server,
          libs,
          quick: options.quick,
          log: log(section),
        });
        result.rows.push(...rows);
      } catch (error) {
        log(section)(`failed: ${error.stack ?? error}`);
        result.errors.push({ store, section, error: String(error.message ?? error) });
      }
      log(section)(`done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
  } finally {
    server.stop();
  }
}

result.finishedAt = new Date().toISOString();
result.durationS = Math.round((performance.now() - started) / 100) / 10;
result.machine.loadavgEnd = machineInfo().loadavg;
const { files, markdown } = writeResults(result, options.out);
console.log(markdown);
console.error(`[bench] ${result.durationS} s; wrote ${files.join(', ')}`);
if (result.errors.length > 0) process.exitCode = 1;
