import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import {
  LeaseClient,
  LeaseholdChannel,
  SqliteStore,
  type LeaseClientOptions,
  type StoreFindingMessage,
} from '../../src/index.js';
import { tempDir } from '../harness/processes.js';

// The one-time report of a store's setup when a LeaseClient is made on it: every finding on the
// leasehold:store:finding channel, the unsafe ones to the client's logger at warn, once per store.

const dir = tempDir('leasehold-setup-report-');
const shm = mkdtempSync('/dev/shm/leasehold-setup-report-');
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  vi.unstubAllEnvs();
});
afterAll(() => {
  dir.cleanup();
  rmSync(shm, { recursive: true, force: true });
});

let n = 0;
async function store(folder: string, synchronous: 'full' | 'normal'): Promise<SqliteStore> {
  const opened = await SqliteStore.open(join(folder, `s${++n}.db`), { synchronous });
  cleanups.push(() => opened.close());
  return opened;
}
function client(options: LeaseClientOptions): LeaseClient {
  const made = new LeaseClient({ ttlMs: 3000, ...options });
  cleanups.push(() => made.close());
  return made;
}
class Logger {
  readonly lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  private write(level: string, fields: object, message: string): void {
    this.lines.push({ level, fields: fields as Record<string, unknown>, message });
  }
  debug = (f: object, m: string): void => this.write('debug', f, m);
  info = (f: object, m: string): void => this.write('info', f, m);
  warn = (f: object, m: string): void => this.write('warn', f, m);
  error = (f: object, m: string): void => this.write('error', f, m);
}

describe('store setup report', () => {
  it('warns the logger once per store of an unsafe setup, naming the finding and its fix', async () => {
    const unsafe = await store(dir.path, 'normal');
    const spy = vi.spyOn(unsafe, 'diagnose');
    const logger = new Logger();
    client({ store: unsafe, logger });
    expect(spy).toHaveBeenCalledTimes(1);
    await vi.waitFor(() => expect(logger.lines).toHaveLength(1));
    const [line] = logger.lines;
    expect(line!.level).toBe('warn');
    expect(line!.fields).toMatchObject({ finding: 'sqlite.synchronous', level: 'unsafe' });
    expect(line!.message).toContain("fix: synchronous: 'full'");
    // Another client with the same logger: the store is not asked again, nothing more is written.
    client({ store: unsafe, logger });
    expect(spy).toHaveBeenCalledTimes(1);
    // Another logger is told too, from the same diagnosis.
    const other = new Logger();
    client({ store: unsafe, logger: other });
    await vi.waitFor(() => expect(other.lines).toHaveLength(1));
    expect(spy).toHaveBeenCalledTimes(1);
    expect(logger.lines).toHaveLength(1);
  });

  it('asks the store nothing when nobody listens, and leaves ignored findings out', async () => {
    const unsafe = await store(dir.path, 'normal');
    const spy = vi.spyOn(unsafe, 'diagnose');
    client({ store: unsafe });
    expect(spy).not.toHaveBeenCalled();

    const logger = new Logger();
    const published: unknown[] = [];
    const listener = (m: unknown): void => void published.push(m);
    subscribe(LeaseholdChannel.storeFinding, listener);
    cleanups.push(async () => unsubscribe(LeaseholdChannel.storeFinding, listener));
    // The finding is ignored for the logger; the channel listener was made first and hears it.
    const tmp = await store(shm, 'normal');
    client({ store: tmp, logger, ignoreFindings: ['sqlite.synchronous'] });
    await vi.waitFor(() => expect(published).toHaveLength(1));
    expect((published[0] as StoreFindingMessage).id).toBe('sqlite.tmpfs');
    expect(logger.lines).toEqual([]); // sqlite.tmpfs is a warning: the channel only
  });

  it('publishes every finding on the channel with what doctor says of it', async () => {
    const published: StoreFindingMessage[] = [];
    const listener = (m: unknown): void => void published.push(m as StoreFindingMessage);
    subscribe(LeaseholdChannel.storeFinding, listener);
    cleanups.push(async () => unsubscribe(LeaseholdChannel.storeFinding, listener));
    client({ store: await store(shm, 'normal') });
    await vi.waitFor(() => expect(published).toHaveLength(2));
    expect(published.map((m) => [m.id, m.level])).toEqual([
      ['sqlite.synchronous', 'unsafe'],
      ['sqlite.tmpfs', 'warning'],
    ]);
    for (const m of published) {
      expect(Object.keys(m).sort()).toEqual(['fix', 'id', 'level', 'observed', 'risk']);
    }
  });

  it('takes LEASEHOLD_IGNORE_FINDINGS from the environment, and warns of an id it does not know', async () => {
    vi.stubEnv('LEASEHOLD_IGNORE_FINDINGS', 'sqlite.synchronous, sqlite.bogus');
    const logger = new Logger();
    client({ store: await store(dir.path, 'normal'), logger });
    expect(logger.lines).toHaveLength(1);
    expect(logger.lines[0]!.message).toMatch(/LEASEHOLD_IGNORE_FINDINGS: .*sqlite\.bogus/);
  });

  it('refuses an ignoreFindings that names no finding, naming the option', async () => {
    const ok = await store(dir.path, 'full');
    expect(() => new LeaseClient({ store: ok, ignoreFindings: ['sqlite.synchronus'] })).toThrow(
      /ignoreFindings.*sqlite\.synchronus/,
    );
    expect(() => new LeaseClient({ store: ok, ignoreFindings: 'x' as never })).toThrow(
      /ignoreFindings/,
    );
  });
});
