import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeServer } from '../harness/describe-server.js';
import { NatsServer, natsUnavailable } from '../harness/nats-server.js';
import { tempDir, waitFor } from '../harness/processes.js';

// The example is what users copy: it runs against the built package, on a private nats-server.
const run = promisify(execFile);
const example = fileURLToPath(new URL('../../examples/queue-nats.mjs', import.meta.url));
const JOBS = 10;

interface Consumer {
  readonly name: string;
  readonly child: ChildProcess;
  readonly lines: string[];
  readonly exited: Promise<number | null>;
}

describeServer('queue-nats example', natsUnavailable(), () => {
  let server: NatsServer;
  const dir = tempDir('leasehold-queue-nats-');

  beforeAll(async () => {
    server = await NatsServer.start();
  });
  afterAll(async () => {
    await server?.stop();
    dir.cleanup();
  });

  function consumer(name: string, db: string): Consumer {
    const child = spawn(process.execPath, [example, 'consume', server.url, db, name, `${JOBS}`], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    let rest = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      const text = rest + chunk.toString();
      const parts = text.split('\n');
      rest = parts.pop()!;
      lines.push(...parts);
    });
    child.stderr!.on('data', (chunk: Buffer) => lines.push(`stderr: ${chunk.toString()}`));
    const exited = new Promise<number | null>((resolve) =>
      child.on('close', (code) => resolve(code)),
    );
    return { name, child, lines, exited };
  }

  it('several consumer processes, duplicate hints and a SIGKILLed consumer: each job applied once, with its holder’s token', async () => {
    const db = join(dir.path, 'effects.db');
    await run(process.execPath, [example, 'produce', server.url, `${JOBS}`]); // every job twice
    const consumers = ['consumer-a', 'consumer-b', 'consumer-c'].map((n) => consumer(n, db));

    // SIGKILL the first consumer seen working on a job: it dies holding that job's lease and an
    // unacked hint, which the queue delivers again once its ack wait passes.
    let victim: { consumer: Consumer; job: string; token: number } | undefined;
    await waitFor(
      'a consumer working on a job',
      () => {
        for (const c of consumers) {
          const working = c.lines
            .map((l) => /working on (job-\d+) with token (\d+)/.exec(l))
            .find(Boolean);
          if (working) {
            victim = { consumer: c, job: working[1]!, token: Number(working[2]) };
            return true;
          }
        }
        return false;
      },
      15_000,
      5,
    );
    victim!.consumer.child.kill('SIGKILL');
    const survivors = consumers.filter((c) => c !== victim!.consumer);
    const codes = await Promise.all(survivors.map((c) => c.exited));
    const log = consumers.flatMap((c) => c.lines.map((line) => ({ by: c.name, line })));
    expect(codes, log.map((l) => l.line).join('\n')).toEqual([0, 0]);

    const effects = new Database(db, { readonly: true });
    const rows = effects.prepare('SELECT job, token, worker FROM effects ORDER BY job').all() as {
      job: string;
      token: number;
      worker: string;
    }[];
    const fenced = new Map(
      (
        effects.prepare('SELECT resource, token FROM leasehold_fence').all() as {
          resource: string;
          token: number;
        }[]
      ).map((r) => [r.resource, r.token]),
    );
    effects.close();

    // Every job's effect exactly once.
    const jobs = Array.from({ length: JOBS }, (_, i) => `job-${i + 1}`);
    expect(rows.map((r) => r.job).sort()).toEqual([...jobs].sort());
    for (const job of jobs) {
      const applied = log.filter((l) => new RegExp(`: applied ${job} with`).test(l.line));
      expect(applied, job).toHaveLength(1);
      const row = rows.find((r) => r.job === job)!;
      // Written by the consumer that held the lease, with that lease's token. The fence has seen
      // that token or a later holder's: one that checked before the job was done, took the lease
      // after its release and, inside the fence, found the job done (and wrote nothing).
      expect(applied[0]!.line).toBe(`${row.worker}: applied ${job} with token ${row.token}`);
      const highest = fenced.get(`jobs/${job}`)!;
      expect(highest).toBeGreaterThanOrEqual(row.token);
      if (highest > row.token) {
        expect(
          log.some((l) => l.line.endsWith(`: found already done ${job} with token ${highest}`)),
          `the holder of token ${highest} of ${job} found it done`,
        ).toBe(true);
      }
    }
    // Duplicate hints reached other consumers while a job was being worked on: the lease, not the
    // queue, decided who did it.
    expect(log.some((l) => /is held by another consumer/.test(l.line))).toBe(true);

    // The killed consumer's job was delivered again and done by another consumer, under a later token.
    const { job, token } = victim!;
    const redone = rows.find((r) => r.job === job)!;
    expect(redone.worker).not.toBe(victim!.consumer.name);
    expect(redone.token).toBeGreaterThan(token);
    expect(
      log.some((l) => l.by !== victim!.consumer.name && l.line.includes(`working on ${job} `)),
    ).toBe(true);
    // Every hint was acked in the end, the one the killed consumer held included: the queue
    // delivered it again (after its ack wait) to a consumer that found the job done.
    const nc = await connect({ servers: `127.0.0.1:${server.port}` });
    try {
      const stream = await (await jetstreamManager(nc)).streams.info('JOBS');
      expect(stream.state.messages).toBe(0);
    } finally {
      await nc.close();
    }
    expect(log.some((l) => /\(delivery [2-9]\d*\)/.test(l.line))).toBe(true);
  }, 60_000);
});
