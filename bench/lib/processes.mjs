// Process and folder plumbing for the benchmarks: free ports, temp folders, and one
// cleanup list that runs on every way out (normal end, error, signal), so no server or worker
// outlives the run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A TCP port on 127.0.0.1 that was free a moment ago: the one leasehold's own starters use.
export { freePort } from '../../dist/cli/harness/servers/process-tree.js';

/** Polls `check` until it returns true, or throws after `timeoutMs`. */
export async function waitFor(what, check, timeoutMs = 20_000, everyMs = 25) {
  const end = Date.now() + timeoutMs;
  let lastError;
  while (Date.now() < end) {
    try {
      if (await check()) return;
    } catch (error) {
      lastError = error;
    }
    await sleep(everyMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${lastError ?? ''}`);
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Synchronous, because `process.on('exit')` cannot wait: each entry kills or removes at once.
const cleanups = new Set();

/** Registers a synchronous cleanup; returns a function that runs it now and forgets it. */
export function onCleanup(fn) {
  cleanups.add(fn);
  return () => {
    if (cleanups.delete(fn)) fn();
  };
}

export function runCleanups() {
  for (const fn of [...cleanups].reverse()) {
    cleanups.delete(fn);
    try {
      fn();
    } catch {
      // best effort: the next entry must still run
    }
  }
}

/** A fresh temp folder (under `base`, default the OS's temp folder), removed at cleanup. */
export function tempDir(prefix, base = tmpdir()) {
  const path = mkdtempSync(join(base, prefix));
  const remove = onCleanup(() => rmSync(path, { recursive: true, force: true }));
  return { path, remove };
}

/** Runs every cleanup on exit, on SIGINT/SIGTERM/SIGHUP and on a crash of the coordinator. */
export function installCleanupHandlers() {
  process.on('exit', runCleanups);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.once(signal, () => {
      runCleanups();
      process.exit(128 + { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 }[signal]);
    });
  }
  process.on('uncaughtException', (error) => {
    console.error(error);
    runCleanups();
    process.exit(1);
  });
}
