import type { Clock, TimerHandle } from '../core/time.js';

/** What the reconcile loop needs of its manager. */
export interface ReconcileHost {
  readonly clock: Clock;
  /** How often, in ms, a settled worker scans (jittered ±20 %). */
  readonly reconcileMs: number;
  readonly ttlMs: number;
  readonly heartbeatMs: number;
  /** One reconcile pass; resolves to the delay until the next one. */
  pass(): Promise<number>;
  /** A pass succeeded. */
  passed(): void;
  /** A pass failed (reported as `reconcile-failed`); the next one comes sooner. */
  failed(error: unknown): void;
  /** Whether the manager is stopping: no pass starts, none is scheduled. */
  stopping(): boolean;
}

/**
 * When a manager reconciles: one pass at a time, the next scheduled at the delay the pass asked
 * for (at most a jittered scan period), at once when a pass was asked for while one ran, and,
 * after a failed pass, with a backoff that doubles from a heartbeat while the store struggles
 * (slower convergence, never lost leases: the heartbeat keeps what is held on its own timer).
 * Nothing runs before `start`, nor once the manager is stopping.
 */
export class ReconcileLoop {
  /**
   * The scan period as scans run: `reconcileMs`, but never longer than a healthy holder's renewal
   * leaves a record unexpired. What is remembered "for a scan" (refusals, announced releases, the
   * wait after a join) is measured in it, not in a `reconcileMs` the scans never wait.
   */
  readonly scanMs: number;
  private timer: TimerHandle | undefined;
  private current: Promise<void> | undefined;
  private rerun = false;
  private failures = 0;
  private scanning = false;

  constructor(private readonly host: ReconcileHost) {
    this.scanMs = Math.max(10, Math.min(host.reconcileMs, this.longest()));
  }

  /** Whether a pass is running. */
  get running(): boolean {
    return this.current !== undefined;
  }

  /** The pass running now, settled whether it succeeds or fails; `undefined` when none runs. */
  get settled(): Promise<void> | undefined {
    return this.current;
  }

  /** Runs the first pass (its failure is reported and retried); from now on, passes may be asked for. */
  start(): Promise<void> {
    this.scanning = true;
    return this.run();
  }

  /** Asks for a pass as soon as possible: now, or right after the one running. */
  request(): void {
    if (this.host.stopping() || !this.scanning) return;
    if (this.current) this.rerun = true;
    else void this.run();
  }

  /** Cancels the scheduled pass (the one running, if any, runs to its end). */
  cancel(): void {
    this.timer?.clear();
  }

  /** The jittered scan period, never longer than a healthy holder's renewal leaves a record unexpired. */
  nextInterval(): number {
    const jittered = this.host.reconcileMs * (0.8 + Math.random() * 0.4);
    return Math.max(10, Math.round(Math.min(jittered, this.longest())));
  }

  /** The longest wait between passes: a healthy holder's record is renewed within it. */
  private longest(): number {
    return this.host.ttlMs - this.host.heartbeatMs * 1.25;
  }

  private async run(): Promise<void> {
    const { host } = this;
    if (host.stopping()) return;
    this.timer?.clear();
    let next: number;
    const pass = host.pass();
    this.current = pass.then(
      () => undefined,
      () => undefined,
    );
    try {
      next = await pass;
      this.failures = 0;
      host.passed();
    } catch (error) {
      host.failed(error);
      // Back off while the store struggles: slower convergence, never lost leases (the heartbeat
      // keeps what is held on its own timer).
      this.failures++;
      const backoff = host.heartbeatMs * 2 ** Math.min(this.failures - 1, 6);
      next = Math.min(this.nextInterval(), Math.round(backoff * (0.75 + Math.random() * 0.5)));
    }
    this.current = undefined;
    if (host.stopping()) return;
    if (this.rerun) {
      this.rerun = false;
      next = 0;
    }
    this.timer = host.clock.setTimeout(() => void this.run(), next);
  }
}
