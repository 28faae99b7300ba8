import type {
  AcquireOutcome,
  Lease,
  LeaseData,
  LeaseRecord,
  LeaseRef,
  LeaseStore,
  ListOptions,
} from '../../src/index.js';
import { LeaseError } from '../../src/index.js';

type Method =
  | 'tryAcquire'
  | 'acquireMany'
  | 'acquireAll'
  | 'acquireFirst'
  | 'renew'
  | 'release'
  | 'writeData'
  | 'renewMany'
  | 'releaseMany'
  | 'get'
  | 'list';

/**
 * Wraps a real store so a test can make it stop answering (`hang`), fail (`fail`) or answer
 * normally, and counts every call. Hung calls can be let through later with `resumeHung()`.
 */
export class FaultyStore implements LeaseStore {
  readonly calls: Record<Method, number> = {
    tryAcquire: 0,
    acquireMany: 0,
    writeData: 0,
    acquireAll: 0,
    acquireFirst: 0,
    renew: 0,
    release: 0,
    renewMany: 0,
    releaseMany: 0,
    get: 0,
    list: 0,
  };
  readonly batchSizes: number[] = [];
  mode: 'pass' | 'hang' | 'fail' = 'pass';
  private hung: (() => void)[] = [];

  constructor(readonly inner: LeaseStore) {}

  get capabilities() {
    return this.inner.capabilities;
  }

  get maxClockSkewMs(): number {
    return this.inner.maxClockSkewMs;
  }

  /** Lets every hung call reach the real store now, as a delayed network reply would. */
  resumeHung(): void {
    const hung = this.hung;
    this.hung = [];
    for (const go of hung) go();
  }

  private call<T>(method: Method, run: () => Promise<T>): Promise<T> {
    this.calls[method]++;
    if (this.mode === 'fail')
      return Promise.reject(
        new LeaseError('STORE_UNAVAILABLE', `${method}: connection refused (injected)`),
      );
    if (this.mode === 'hang')
      return new Promise<T>((resolve, reject) => this.hung.push(() => run().then(resolve, reject)));
    return run();
  }

  tryAcquire(resource: string, owner: string, ttlMs: number): Promise<Lease | null> {
    return this.call('tryAcquire', () => this.inner.tryAcquire(resource, owner, ttlMs));
  }
  acquireMany(
    resources: readonly string[],
    owner: string,
    ttlMs: number,
  ): Promise<AcquireOutcome[]> {
    return this.call('acquireMany', () => this.inner.acquireMany(resources, owner, ttlMs));
  }
  acquireAll(resources: readonly string[], owner: string, ttlMs: number): Promise<Lease[] | null> {
    return this.call('acquireAll', () => this.inner.acquireAll(resources, owner, ttlMs));
  }
  acquireFirst(resources: readonly string[], owner: string, ttlMs: number): Promise<Lease | null> {
    return this.call('acquireFirst', () => this.inner.acquireFirst(resources, owner, ttlMs));
  }
  renew(lease: Lease, ttlMs?: number, data?: LeaseData | null): Promise<Lease | null> {
    return this.call('renew', () => this.inner.renew(lease, ttlMs, data));
  }
  release(lease: LeaseRef, data?: LeaseData | null): Promise<boolean> {
    return this.call('release', () => this.inner.release(lease, data));
  }
  writeData(lease: LeaseRef, data: LeaseData | null): Promise<boolean> {
    return this.call('writeData', () => this.inner.writeData(lease, data));
  }
  renewMany(leases: readonly Lease[], ttlMs?: number): Promise<(Lease | null)[]> {
    this.batchSizes.push(leases.length);
    return this.call('renewMany', () => this.inner.renewMany(leases, ttlMs));
  }
  releaseMany(leases: readonly LeaseRef[]): Promise<boolean[]> {
    return this.call('releaseMany', () => this.inner.releaseMany(leases));
  }
  get(resource: string): Promise<LeaseRecord | null> {
    return this.call('get', () => this.inner.get(resource));
  }
  list(options?: ListOptions): Promise<LeaseRecord[]> {
    return this.call('list', () => this.inner.list(options));
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
