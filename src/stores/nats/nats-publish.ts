import type {
  NatsConnectionLike,
  NatsModules,
  NatsMsgLike,
  NatsStatusLike,
} from './nats-driver.js';
import { isConflict, isPublishRefusal } from './nats-errors.js';
import { conditionOn } from './nats-ops.js';

/**
 * How one conditional write ended: `error` when it got no usable answer (none in time, no
 * JetStream listening, the connection closed, another JetStream error), else the revision it
 * wrote, or `null` when the key's last revision was not the one it was conditioned on.
 */
export type WriteAnswer = (error: Error | undefined, revision: number | null) => void;

interface Pending {
  /** `performance.now()` after which the write counts as unanswered. */
  readonly deadline: number;
  /** Where it was published: how a refusal of the publish itself (permissions) finds it. */
  readonly subject: string;
  readonly answer: WriteAnswer;
}

/** A JetStream publish acknowledgement, or its refusal. */
interface PubAck {
  seq?: unknown;
  error?: { code?: unknown; err_code?: unknown; description?: unknown };
}

const decoder = new TextDecoder();

/**
 * Conditional writes to a KV bucket sent the way `@nats-io/kv`'s `put` sends them (a JetStream
 * publish on the key's subject, `$KV.<bucket>.<key>`, with the `Nats-Expected-Last-Subject-Sequence`
 * header, answered by an acknowledgement or "wrong last sequence"), without its per-write cost:
 * every answer comes back through one subscription on a private inbox, told apart by a counter in
 * the reply subject, and one timer serves every write's deadline (they all wait `timeoutMs`, so
 * deadlines fall in the order writes were sent). The driver's request path builds three `Error`
 * objects (stack traces included), a timer and a subscription entry per write; at tens of
 * thousands of writes per `renewMany` that was most of the client's time.
 *
 * An answer that comes after its write's deadline is dropped: the write may still have landed,
 * and the store settles that by reading the record back, as for any unanswered write. A publish
 * the server refuses (the user may not publish on the key's subject) fails at once, as the
 * driver's request would, from the connection's status events.
 */
export class NatsPublisher {
  private readonly pending = new Map<number, Pending>();
  /** Reply subjects are `<inbox>.<n>`; `sent` is the last `n` handed out. */
  private readonly inbox: string;
  private sent = 0;
  /** Every write numbered below this one has been answered or expired. */
  private oldest = 1;
  private timer: NodeJS.Timeout | undefined;
  private subscription: { unsubscribe(): void } | undefined;
  private statuses: AsyncIterable<NatsStatusLike> | undefined;
  private closedError: Error | undefined;

  constructor(
    private readonly nc: NatsConnectionLike,
    private readonly transport: NatsModules['transport'],
    /** The subject of a key is this prefix and the key: `$KV.<bucket>.`. */
    private readonly subjectPrefix: string,
    private readonly timeoutMs: number,
  ) {
    const inboxPrefix = (nc as { options?: { inboxPrefix?: unknown } }).options?.inboxPrefix;
    this.inbox = transport.createInbox(typeof inboxPrefix === 'string' ? inboxPrefix : undefined);
    nc.closed().then(
      () => this.close(closedConnection()),
      () => this.close(closedConnection()),
    );
  }

  /** Writes `data` under `key` only if the key's last revision is `previousSeq` (0: it has none). */
  put(key: string, data: Uint8Array, previousSeq: number): Promise<number | null> {
    return new Promise((resolve, reject) =>
      this.write(key, data, previousSeq, (error, revision) =>
        error ? reject(error) : resolve(revision),
      ),
    );
  }

  /** `put` with a callback, for batches: `answer` is called exactly once, never synchronously. */
  write(key: string, data: Uint8Array, previousSeq: number, answer: WriteAnswer): void {
    try {
      if (this.closedError) throw this.closedError;
      this.subscribe();
      const headers = conditionOn(this.transport, previousSeq);
      const n = ++this.sent;
      const subject = this.subjectPrefix + key;
      // Sends first: a connection that refuses it throws before anything waits for an answer.
      this.nc.publish(subject, data, { reply: `${this.inbox}.${n}`, headers });
      this.pending.set(n, { deadline: performance.now() + this.timeoutMs, subject, answer });
      this.timer ??= this.schedule(this.timeoutMs);
    } catch (error) {
      queueMicrotask(() => answer(asError(error), null));
    }
  }

  /** Stops listening; writes still waiting fail with `error` (the connection closed). */
  close(error: Error = closedConnection()): void {
    this.closedError ??= error;
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    (this.statuses as { stop?: () => void } | undefined)?.stop?.();
    this.statuses = undefined;
    this.failAll(this.closedError);
  }

  private subscribe(): void {
    if (this.subscription) return;
    if (!this.statuses) this.watchRefusals();
    const start = this.inbox.length + 1;
    this.subscription = this.nc.subscribe(`${this.inbox}.*`, {
      callback: (error, msg) => {
        if (error) {
          // The subscription itself was refused (permissions): nothing can be answered through it.
          this.subscription = undefined;
          this.failAll(error);
          return;
        }
        const n = Number(msg.subject.slice(start));
        const pending = this.pending.get(n);
        if (pending === undefined) return; // past its deadline: dropped
        this.pending.delete(n);
        if (n === this.oldest) this.passAnswered();
        answerWith(pending.answer, msg);
      },
    });
  }

  /** Fails the writes whose publish the server refused (`-ERR Permissions Violation for Publish`). */
  private watchRefusals(): void {
    const statuses = this.nc.status();
    this.statuses = statuses;
    void (async () => {
      for await (const { type, error } of statuses) {
        if (type !== 'error' || !isPublishRefusal(error)) continue;
        for (const [n, pending] of this.pending) {
          if (pending.subject !== error.subject) continue;
          this.pending.delete(n);
          pending.answer(error, null);
        }
      }
    })().catch(() => {}); // the iterator ends with the connection
  }

  private schedule(ms: number): NodeJS.Timeout {
    const timer = setTimeout(() => this.expire(), Math.max(1, ms));
    timer.unref();
    return timer;
  }

  /**
   * Moves `oldest` past writes already answered, as answers come (mostly in order), so the
   * deadline timer never walks a long run of them in one go.
   */
  private passAnswered(): void {
    while (this.oldest <= this.sent && !this.pending.has(this.oldest)) this.oldest++;
  }

  /** Fails every write past its deadline, then waits for the next one's. */
  private expire(): void {
    this.timer = undefined;
    const now = performance.now();
    const late: WriteAnswer[] = [];
    while (this.oldest <= this.sent) {
      const pending = this.pending.get(this.oldest);
      if (pending !== undefined) {
        if (pending.deadline > now) {
          this.timer = this.schedule(pending.deadline - now);
          break;
        }
        this.pending.delete(this.oldest);
        late.push(pending.answer);
      }
      this.oldest++;
    }
    // Answered last: an answer may send a write, which finds the timer already set.
    for (const answer of late) answer(noAnswer(this.timeoutMs), null);
  }

  private failAll(error: Error): void {
    const waiting = [...this.pending.values()];
    this.pending.clear();
    this.oldest = this.sent + 1;
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const { answer } of waiting) answer(error, null);
  }
}

/** Reads one answer: a revision, a refusal for a stale revision, or an error. */
function answerWith(answer: WriteAnswer, msg: NatsMsgLike): void {
  if (msg.data.length === 0) {
    const status = msg.headers?.code;
    return answer(
      status === 503
        ? named('NoResponders', 'no JetStream stream listens on the key subject')
        : named('JetStreamError', `an empty answer (status ${String(status)})`),
      null,
    );
  }
  let ack: PubAck;
  try {
    ack = JSON.parse(decoder.decode(msg.data)) as PubAck;
  } catch {
    return answer(named('JetStreamError', 'an answer that is not JSON'), null);
  }
  if (ack.error !== undefined) {
    const { code, err_code: errCode, description } = ack.error;
    const refusal = Object.assign(named('JetStreamApiError', String(description)), {
      code: errCode,
      status: code,
    });
    return isConflict(refusal) ? answer(undefined, null) : answer(refusal, null);
  }
  const seq = ack.seq;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1)
    return answer(named('JetStreamError', 'an acknowledgement without a revision'), null);
  answer(undefined, seq);
}

function named(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

function noAnswer(ms: number): Error {
  return named('TimeoutError', `the conditional write got no answer within ${ms} ms`);
}

function closedConnection(): Error {
  return named('ClosedConnectionError', 'the NATS connection was closed');
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
