import {
  LeaseManager,
  MemoryStore,
  type HeldLease,
  type LeaseManagerOptions,
} from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { FaultyStore } from '../harness/faulty-store.js';

export interface Worker {
  readonly id: string;
  readonly manager: LeaseManager;
  /** The worker's own path to the store: set `mode = 'hang'` to cut it off (a crash or partition). */
  readonly link: FaultyStore;
  readonly working: Set<string>;
}

/** A fleet on one manual clock and one memory store; every worker reaches the store through its own link. */
export class Fleet {
  readonly clock = new ManualClock();
  readonly store = new MemoryStore({ clock: this.clock });
  readonly workers: Worker[] = [];
  private n = 0;

  constructor(private readonly defaults: Partial<LeaseManagerOptions>) {}

  async join(options: Partial<LeaseManagerOptions> = {}): Promise<Worker> {
    const id = `w${++this.n}`;
    const link = new FaultyStore(this.store);
    const working = new Set<string>();
    const manager = new LeaseManager({
      store: link,
      owner: id,
      clock: this.clock,
      resources: [],
      settleMs: 0,
      onAcquired: (lease: HeldLease) => {
        working.add(lease.resource);
        return new Promise<void>((resolve) =>
          lease.signal.addEventListener('abort', () => {
            working.delete(lease.resource);
            resolve();
          }),
        );
      },
      ...this.defaults,
      ...options,
    });
    const worker = { id, manager, link, working };
    this.workers.push(worker);
    await manager.start();
    return worker;
  }

  live(): Worker[] {
    return this.workers.filter((w) => w.link.mode === 'pass');
  }

  /** Resources each worker believes it holds right now (valid on its own clock). */
  holders(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const w of this.workers) {
      for (const lease of w.manager.held()) {
        if (!lease.isValid()) continue;
        out.set(lease.resource, [...(out.get(lease.resource) ?? []), w.id]);
      }
    }
    return out;
  }

  counts(workers = this.live()): number[] {
    return workers.map((w) => w.manager.held().length);
  }

  async stopAll(): Promise<void> {
    for (const w of this.workers) {
      w.link.mode = 'pass';
      w.link.resumeHung();
    }
    await Promise.allSettled(this.workers.map((w) => w.manager.stop({ timeoutMs: 100 })));
  }
}

export const names = (n: number, prefix = 'shard/'): string[] =>
  Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(3, '0')}`);
