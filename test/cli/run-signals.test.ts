import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, waitFor } from '../harness/processes.js';
import { MAIN, runCli, startCli, type StartedCli } from './run-cli.js';

let dir: ReturnType<typeof tempDir>;
let n = 0;
/** Processes a test started, each with its start time so that a reused pid is never signalled. */
const tracked = new Map<number, string>();

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build`);
  dir = tempDir('leasehold-run-signals-');
});
afterEach(() => {
  // A failed test must not leave a stopped leasehold or command behind.
  for (const [pid, start] of tracked) {
    if (stat(pid)?.startTime !== start) continue;
    for (const signal of ['SIGKILL', 'SIGCONT'] as const) {
      try {
        process.kill(pid, signal);
      } catch {
        // gone
      }
    }
  }
  tracked.clear();
});
afterAll(() => dir?.cleanup());

/** `leasehold ...args`, started in the temp folder and stopped after the test if still running. */
function leasehold(...args: string[]): StartedCli {
  const run = startCli(args, { cwd: dir.path });
  track(run.child.pid!);
  return run;
}

/** A fresh on-disk SQLite store and a reader of its records. */
function freshStore(): { url: string; record: (resource: string) => Record<string, unknown> } {
  const path = join(dir.path, `signals-${++n}.db`);
  return {
    url: `sqlite:${path}`,
    record: (resource) => {
      const db = new Database(path, { readonly: true });
      try {
        return db
          .prepare('SELECT owner, token FROM leasehold_leases WHERE resource = ?')
          .get(resource) as Record<string, unknown>;
      } finally {
        db.close();
      }
    },
  };
}

/** The fields of /proc/<pid>/stat after the command name, or undefined once the process is gone or a zombie. */
function stat(
  pid: number,
): { state: string; pgrp: number; session: number; startTime: string } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const [state, , pgrp, session] = fields;
  if (state === 'Z') return undefined;
  return { state: state!, pgrp: Number(pgrp), session: Number(session), startTime: fields[19]! };
}
const track = (pid: number): void => void tracked.set(pid, stat(pid)?.startTime ?? '-');
const stopped = (pid: number): boolean => stat(pid)?.state === 'T';
const running = (pid: number): boolean => stat(pid) !== undefined && !stopped(pid);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * A command that appends a line to a file every 20 ms, records (and survives) SIGTERM in that file,
 * says "ready <pid>", and exits 5 once a "go" file exists.
 */
function ticker(): {
  argv: string[];
  ticks: string;
  go: string;
  size: () => number;
  log: () => string;
} {
  const ticks = join(dir.path, `ticks-${++n}.txt`);
  const go = join(dir.path, `go-${n}`);
  const script = [
    'const fs = require("node:fs");',
    'const [, ticks, go] = process.argv;',
    'process.on("SIGTERM", () => fs.appendFileSync(ticks, "SIGTERM\\n"));',
    'setInterval(() => { fs.appendFileSync(ticks, "t\\n"); if (fs.existsSync(go)) process.exit(5); }, 20);',
    'console.log("ready " + process.pid);',
  ].join(' ');
  writeFileSync(ticks, '');
  const log = (): string => readFileSync(ticks, 'utf8');
  return {
    argv: ['--', process.execPath, '-e', script, ticks, go],
    ticks,
    go,
    log,
    size: () => log().length,
  };
}

/** Waits for the command's "ready <pid>" line and for its first ticks; returns its pid. */
async function commandPid(run: StartedCli, size: () => number): Promise<number> {
  await waitFor('the command to start', () => /ready \d+\n/.test(run.stdout()));
  const pid = Number(/ready (\d+)/.exec(run.stdout())![1]);
  track(pid);
  await waitFor('the command to tick', () => size() > 0);
  return pid;
}

const modes = [
  { name: 'in its own session', flags: [] as string[] },
  { name: 'with --foreground', flags: ['--foreground'] },
];

describe.each(modes)('leasehold run, command $name: Ctrl-Z', ({ flags }) => {
  it('stops the command with leasehold and continues both when the lease is still held', async () => {
    const store = freshStore();
    const cmd = ticker();
    const run = leasehold('run', 'tstp-ok', '--store', store.url, ...flags, ...cmd.argv);
    const pid = await commandPid(run, cmd.size);
    const holder = run.child.pid!;

    process.kill(holder, 'SIGTSTP');
    await waitFor('leasehold and the command to be stopped', () => stopped(holder) && stopped(pid));
    const size = cmd.size();
    await sleep(300);
    expect(cmd.size()).toBe(size);

    process.kill(holder, 'SIGCONT');
    await waitFor('both to run again', () => running(holder) && running(pid));
    await waitFor('the command to tick again', () => cmd.size() > size);

    writeFileSync(cmd.go, '');
    expect(await run.exit).toBe(5);
    expect(run.stderr()).toBe('');
    expect(cmd.log()).not.toContain('SIGTERM');
    expect(store.record('tstp-ok')).toEqual({ owner: '', token: 1 });
  });

  it('kills the stopped command instead of continuing it when the lease lapsed and was taken meanwhile', async () => {
    const store = freshStore();
    const cmd = ticker();
    const run = leasehold(
      'run',
      'tstp-lost',
      '--store',
      store.url,
      '--ttl',
      '1s',
      '--grace',
      '10s',
      ...flags,
      ...cmd.argv,
    );
    const pid = await commandPid(run, cmd.size);
    const holder = run.child.pid!;

    process.kill(holder, 'SIGTSTP');
    await waitFor('leasehold and the command to be stopped', () => stopped(holder) && stopped(pid));
    const size = cmd.size();

    // Nobody renews while leasehold is stopped: another owner gets the lease once it lapses.
    const thief = await runCli(
      ['acquire', 'tstp-lost', '--store', store.url, '--owner', 'thief', '--wait', '15s'],
      { cwd: dir.path },
    );
    expect(thief.code).toBe(0);
    expect(store.record('tstp-lost')).toEqual({ owner: 'thief', token: 2 });
    expect(stopped(pid)).toBe(true);

    process.kill(holder, 'SIGCONT');
    expect(await run.exit).toBe(70);
    await waitFor('the command to be gone', () => stat(pid) === undefined);
    // Never continued: not one more tick, and no SIGTERM handler ran (SIGKILL reaches a stopped process).
    expect(cmd.size()).toBe(size);
    expect(cmd.log()).not.toContain('SIGTERM');
    expect(run.stderr()).toMatch(
      /^leasehold: LEASE_LOST: lease on "tstp-lost" \(token 1\) lost: its validity deadline passed while leasehold was stopped; killing the stopped command \(SIGKILL\) without continuing it\n/,
    );
    expect(store.record('tstp-lost')).toEqual({ owner: 'thief', token: 2 });
  });
});

describe('leasehold run: a stop leasehold cannot catch', () => {
  it('SIGSTOP of leasehold leaves the command running; past the deadline and the grace, SIGCONT kills it at once', async () => {
    const store = freshStore();
    const cmd = ticker();
    const run = leasehold(
      'run',
      'frozen',
      '--store',
      store.url,
      '--ttl',
      '1s',
      '--grace',
      '300ms',
      ...cmd.argv,
    );
    const pid = await commandPid(run, cmd.size);
    const holder = run.child.pid!;

    process.kill(holder, 'SIGSTOP');
    await waitFor('leasehold to be stopped', () => stopped(holder));
    // What no process can prevent: the command goes on while its supervisor is frozen.
    const size = cmd.size();
    await waitFor('the command to keep ticking', () => cmd.size() > size);
    expect(running(pid)).toBe(true);

    const thief = await runCli(
      ['acquire', 'frozen', '--store', store.url, '--owner', 'thief', '--wait', '15s'],
      { cwd: dir.path },
    );
    expect(thief.code).toBe(0);
    await sleep(1000); // well past the 300ms grace after the deadline

    process.kill(holder, 'SIGCONT');
    expect(await run.exit).toBe(70);
    await waitFor('the command to be gone', () => stat(pid) === undefined);
    // The grace counts from the lease's deadline and is long spent: SIGKILL, no SIGTERM first.
    expect(cmd.log()).not.toContain('SIGTERM');
    expect(run.stderr()).toMatch(
      /^leasehold: LEASE_LOST: lease on "frozen" \(token 1\) lost: .*; stopping the command: SIGKILL now, the lease ended [\d.]+m?s ago, more than the 300ms grace\n$/,
    );
    expect(store.record('frozen')).toEqual({ owner: 'thief', token: 2 });
  });
});

describe('leasehold run: session and terminal', () => {
  it('runs the command in its own session by default, and in leasehold’s group and session with --foreground', async () => {
    for (const { flags, same } of [
      { flags: [], same: false },
      { flags: ['--foreground'], same: true },
    ]) {
      const store = freshStore();
      const cmd = ticker();
      const run = leasehold('run', 'session', '--store', store.url, ...flags, ...cmd.argv);
      const pid = await commandPid(run, cmd.size);
      const child = stat(pid)!;
      const holder = stat(run.child.pid!)!;
      if (same) {
        expect(child.session).toBe(holder.session);
        expect(child.pgrp).toBe(holder.pgrp);
      } else {
        expect(child.session).toBe(pid);
        expect(child.pgrp).toBe(pid);
        expect(child.session).not.toBe(holder.session);
      }
      writeFileSync(cmd.go, '');
      expect(await run.exit).toBe(5);
    }
  });

  it('with --foreground, still stops the command and what it started when the lease is lost', async () => {
    const store = freshStore();
    const script = [
      'const g = require("node:child_process").spawn("sleep", ["1000"], { stdio: "ignore" });',
      'process.on("SIGTERM", () => console.log("got SIGTERM"));',
      'console.log("ready " + g.pid);',
      'setInterval(() => {}, 1000);',
    ].join(' ');
    const run = leasehold(
      'run',
      'fg-lost',
      '--store',
      store.url,
      '--ttl',
      '1s',
      '--grace',
      '300ms',
      '--foreground',
      '--',
      process.execPath,
      '-e',
      script,
    );
    await waitFor('the command to start', () => /ready \d+\n/.test(run.stdout()));
    const grandchild = Number(/ready (\d+)/.exec(run.stdout())![1]);
    track(grandchild);
    expect(running(grandchild)).toBe(true);

    const db = new Database(store.url.slice('sqlite:'.length));
    db.prepare(
      "UPDATE leasehold_leases SET owner = 'thief', token = token + 1, expires_at = ? WHERE resource = 'fg-lost'",
    ).run(Date.now() + 60_000);
    db.close();

    expect(await run.exit).toBe(70);
    expect(run.stdout()).toContain('got SIGTERM\n');
    await waitFor('the grandchild to be gone', () => stat(grandchild) === undefined);
    expect(running(run.child.pid!)).toBe(false);
  });

  const hasScript = spawnSync('script', ['--version']).status === 0;

  /** Runs `leasehold ...args` on a fresh pseudo-terminal (util-linux script); `keys` are typed once it prints "ready". */
  function onTerminal(args: string[], keys = ''): Promise<{ code: number; output: string }> {
    const quote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`;
    // `exec`: script runs the line through $SHELL, and a shell that stayed (dash does) would be in
    // the terminal's foreground group and die of the Ctrl-C itself.
    const line = `exec ${[process.execPath, MAIN, ...args].map(quote).join(' ')}`;
    const env = { ...process.env };
    delete env.LEASEHOLD_STORE;
    const child = spawn('script', ['-qec', line, '/dev/null'], { cwd: dir.path, env });
    let output = '';
    let typed = false;
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (!typed && output.includes('ready')) {
        typed = true;
        if (keys) child.stdin.write(keys);
      }
    });
    return new Promise((resolve) =>
      child.once('close', (code) => resolve({ code: code ?? -1, output })),
    );
  }

  it.skipIf(!hasScript)(
    'gives the command the terminal only with --foreground (a password prompt needs /dev/tty)',
    async () => {
      const probe = [
        '--',
        'sh',
        '-c',
        'if ( : < /dev/tty ) 2>/dev/null; then echo ready tty; else echo ready no-tty; fi',
      ];
      const store = freshStore();
      const own = await onTerminal(['run', 'tty', '--store', store.url, ...probe]);
      expect(own.output).toContain('ready no-tty');
      expect(own.code).toBe(0);
      const fg = await onTerminal(['run', 'tty', '--store', store.url, '--foreground', ...probe]);
      expect(fg.output).toContain('ready tty');
      expect(fg.code).toBe(0);
    },
  );

  it.skipIf(!hasScript)(
    'delivers one Ctrl-C to the command in either mode (with --foreground the terminal sends it, leasehold does not repeat it)',
    async () => {
      const counter = [
        '--',
        process.execPath,
        '-e',
        'let n = 0; process.on("SIGINT", () => n++); console.log("ready"); setTimeout(() => { console.log("sigint " + n); process.exit(0); }, 1500);',
      ];
      for (const flags of [[], ['--foreground']]) {
        const store = freshStore();
        const result = await onTerminal(
          ['run', 'ctrl-c', '--store', store.url, ...flags, ...counter],
          '\x03',
        );
        expect(result.output, flags.join(' ')).toContain('sigint 1');
        expect(result.code).toBe(0);
      }
    },
  );
});
