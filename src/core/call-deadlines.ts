/** A call waiting for its answer, in a list ordered by deadline. */
interface Pending {
  readonly at: number;
  readonly operation: string;
  readonly reject: (error: unknown) => void;
  /** What the call gives up when its deadline passes first (a connection it holds), if anything. */
  abandon: (() => void) | void;
  prev: Pending | undefined;
  next: Pending | undefined;
  linked: boolean;
}

/**
 * The same deadline for every call of a store, kept with one timer instead of one per call. Every
 * call waits `ms`, so the calls are in deadline order as they start: a linked list in start order,
 * and a timer armed for its head. Starting or settling a call is a few pointer moves; the timer is
 * armed at most once per `ms` while calls keep coming, and never keeps the process alive.
 */
export class CallDeadlines {
  private head: Pending | undefined;
  private tail: Pending | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly ms: number,
    private readonly timeoutError: (operation: string) => unknown,
  ) {}

  /**
   * Calls `start` with a `resolve` and a `reject` that settle the returned promise, which rejects
   * with `timeoutError(operation)` instead if neither came within `ms`; then the function `start`
   * returned, if any, is called (to drop a connection that never answered). Taking callbacks rather
   * than a promise saves the call a promise and a turn of the microtask queue.
   */
  bound<T>(
    operation: string,
    start: (resolve: (value: T) => void, reject: (error: unknown) => void) => (() => void) | void,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const entry: Pending = {
        at: performance.now() + this.ms,
        operation,
        reject,
        abandon: undefined,
        prev: this.tail,
        next: undefined,
        linked: true,
      };
      if (this.tail) this.tail.next = entry;
      else this.head = entry;
      this.tail = entry;
      this.timer ??= this.arm(this.ms);
      const fail = (error: unknown): void => {
        this.unlink(entry);
        reject(error);
      };
      try {
        entry.abandon = start((value) => {
          this.unlink(entry);
          resolve(value); // a no-op once the deadline rejected it
        }, fail);
      } catch (error) {
        fail(error);
      }
    });
  }

  private unlink(entry: Pending): void {
    if (!entry.linked) return;
    entry.linked = false;
    if (entry.prev) entry.prev.next = entry.next;
    else this.head = entry.next;
    if (entry.next) entry.next.prev = entry.prev;
    else this.tail = entry.prev;
  }

  private arm(delay: number): ReturnType<typeof setTimeout> {
    const timer = setTimeout(() => this.expire(), Math.max(1, Math.ceil(delay)));
    timer.unref();
    return timer;
  }

  private expire(): void {
    this.timer = undefined;
    const now = performance.now();
    while (this.head && this.head.at <= now) {
      const late = this.head;
      this.unlink(late);
      late.reject(this.timeoutError(late.operation));
      late.abandon?.();
    }
    if (this.head) this.timer = this.arm(this.head.at - now);
  }
}
