import { execFile, execFileSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeServer } from '../harness/describe-server.js';

// The lease protocol's model (model/lease.pml), checked exhaustively by SPIN: the protocol as
// written is safe within its bounds, and each deliberately broken variant is caught with a
// counterexample that shows two clients believing they hold the lease at once.

const MODEL = fileURLToPath(new URL('../../model/lease.pml', import.meta.url));
/** One request per client in flight: the bound under which the full model's states fit (README). */
const ONE = '-DNSLOT=1';
/** Two in flight per client, with the fewer behaviours of FOCUS_REORDER (README). */
const TWO = ['-DNSLOT=2', '-DFOCUS_REORDER'];
/** A counting lease of two permits, two clients, two grants a run (README: three do not fit). */
const PERMITS = [ONE, '-DNPERM=2', '-DMAXTOK=2'];
/** Tokens that skip: a refusal may burn a number of a counter kept apart from the hold (README). */
const SKIP = [ONE, '-DSKIP_TOKENS', '-DMAXTOK=2'];

function missingTool(): string | null {
  for (const [tool, args] of [
    ['spin', ['-V']],
    ['gcc', ['--version']],
  ] as const) {
    try {
      execFileSync(tool, args, { stdio: 'ignore' });
    } catch {
      return `${tool} is not installed (apt-get install spin gcc)`;
    }
  }
  return null;
}

interface Outcome {
  /** The variant's defines. */
  readonly defines: readonly string[];
  /** pan's report. */
  readonly output: string;
  readonly errors: number;
  readonly states: number;
  /** Whether pan stopped before exploring everything (memory, depth, or at the first error). */
  readonly incomplete: boolean;
  /** `spin -t` replaying the error trail, when there is one. */
  readonly trail: string;
}

function run(cmd: string, args: readonly string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd, maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      // pan exits 0 with errors found too; a failure here is a tool that could not run.
      if (error) reject(new Error(`${cmd} ${args.join(' ')} failed: ${error.message}\n${stderr}`));
      else resolve(stdout + stderr);
    });
  });
}

/** Generates, compiles and runs the verifier for one variant in its own directory. */
async function check(root: string, name: string, defines: readonly string[]): Promise<Outcome> {
  const dir = join(root, name);
  await mkdir(dir);
  await copyFile(MODEL, join(dir, 'lease.pml'));
  const all = [...defines];
  await run('spin', [...all, '-a', 'lease.pml'], dir);
  // -DSAFETY: assertions and invalid end states, no cycles; -DMEMLIM: a hard cap, so a model that
  // outgrew its bounds fails loudly instead of swapping. No -DCOLLAPSE: these state spaces fit
  // without it, and it doubled the compile and took a third more to search (the same states).
  await run('gcc', ['-w', '-O1', '-DSAFETY', '-DMEMLIM=512', '-o', 'pan', 'pan.c'], dir);
  const output = await run('./pan', ['-m200000'], dir);
  const errors = Number(/errors: (\d+)/.exec(output)?.[1] ?? NaN);
  const states = Number(/(\d+) states, stored/.exec(output)?.[1] ?? NaN);
  const incomplete =
    /Search not completed|max search depth too small|out of memory|reached -DMEMLIM bound/.test(
      output,
    );
  const trail = errors > 0 ? await run('spin', [...all, '-t', 'lease.pml'], dir) : '';
  return { defines, output, errors, states, incomplete, trail };
}

/** Runs the checks two at a time (the machine has two cores, shared). */
function checkAll(root: string, variants: Record<string, readonly string[]>) {
  const results = new Map<string, Promise<Outcome>>();
  const lanes: Promise<unknown>[] = [Promise.resolve(), Promise.resolve()];
  Object.entries(variants).forEach(([name, defines], i) => {
    const next = lanes[i % 2]!.then(() => check(root, name, defines));
    results.set(name, next);
    lanes[i % 2] = next.catch(() => undefined); // reported by the test that awaits it
  });
  return (name: string): Promise<Outcome> => results.get(name)!;
}

/** The overlap the monitor prints just before its assertion fails, with both tokens. */
function believers(trail: string): [number, number] | null {
  const m = /TWO BELIEVERS: client 0 token (\d+) \(\d+ ticks? left\), client 1 token (\d+)/.exec(
    trail,
  );
  return m ? [Number(m[1]), Number(m[2])] : null;
}

function describeOutcome(o: Outcome): string {
  return `spin ${o.defines.join(' ')}:\n${o.output}`;
}

describeServer('the lease protocol model, checked by SPIN', missingTool(), () => {
  let root = '';
  let outcome: (name: string) => Promise<Outcome>;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'leasehold-spin-'));
    outcome = checkAll(root, {
      local: [ONE],
      store: [ONE, '-DCLOCK_STORE'],
      nowAtSend: [ONE, '-DNOW_AT_SEND'],
      fromReply: [ONE, '-DDEADLINE_FROM_REPLY'],
      fromReplyStore: [ONE, '-DDEADLINE_FROM_REPLY', '-DCLOCK_STORE'],
      skew: [ONE, '-DSKEW_BEYOND_BOUND'],
      takeover: [ONE, '-DREACH_TAKEOVER'],
      fenceReject: [ONE, '-DREACH_FENCE_REJECT'],
      twoLocal: [...TWO],
      twoStore: [...TWO, '-DCLOCK_STORE'],
      twoNowAtSend: [...TWO, '-DNOW_AT_SEND'],
      twoNowAtSendForward: [...TWO, '-DNOW_AT_SEND', '-DRENEW_FORWARD_ONLY'],
      permitsLocal: [...PERMITS],
      permitsStore: [...PERMITS, '-DCLOCK_STORE'],
      permitsBlind: [ONE, '-DNPERM=2', '-DBLIND_PICK'],
      permitsAll: [ONE, '-DNPERM=2', '-DREACH_ALL_PERMITS'],
      dataLocal: [ONE, '-DDATA', '-DMAXTOK=2'],
      dataStore: [ONE, '-DDATA', '-DMAXTOK=2', '-DCLOCK_STORE'],
      dataUnchecked: [ONE, '-DDATA', '-DMAXTOK=2', '-DWRITE_UNCHECKED'],
      dataReach: [ONE, '-DDATA', '-DREACH_DATA_WRITE'],
      skipLocal: [...SKIP],
      skipStore: [...SKIP, '-DCLOCK_STORE'],
      skipBurnTwo: [...SKIP, '-DMAXBURN=2'],
      skipReach: [...SKIP, '-DREACH_SKIP'],
      skipFenceReject: [...SKIP, '-DREACH_FENCE_REJECT'],
    });
  });

  afterAll(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  const safe = (name: string, what: string, minStates = 100_000): void => {
    it(`${what}: every assertion holds over the full state space`, async () => {
      const o = await outcome(name);
      expect(o.errors, describeOutcome(o)).toBe(0);
      expect(o.incomplete, describeOutcome(o)).toBe(false);
      expect(o.output).toMatch(/Full statespace search for:/);
      expect(o.output).toMatch(/assertion violations\s+\+/);
      // A check over a handful of states would prove nothing: the reachable space is large.
      expect(o.states, describeOutcome(o)).toBeGreaterThan(minStates);
    }, 180_000);
  };

  safe('local', "a 'local' clock store (clock.now() read inside the CAS), skew within the bound");
  safe('store', "a 'store' clock store");
  safe('nowAtSend', "a 'local' clock store whose adapter reads clock.now() before sending");
  safe('twoLocal', "two requests in flight, a 'local' clock store", 50_000);
  safe('twoStore', "two requests in flight, a 'store' clock store", 50_000);
  safe(
    'twoNowAtSendForward',
    'two requests in flight, clock.now() read before sending, renew never moving expiresAt back',
    50_000,
  );

  safe('permitsLocal', "two permits picked in one CAS, a 'local' clock store", 500_000);
  safe('permitsStore', "two permits picked in one CAS, a 'store' clock store", 500_000);

  safe('dataLocal', "lease data written under the token, a 'local' clock store", 500_000);
  safe('dataStore', "lease data written under the token, a 'store' clock store", 500_000);

  safe('skipLocal', "tokens that skip (a refusal burns a number), a 'local' clock store", 500_000);
  safe('skipStore', "tokens that skip, a 'store' clock store", 300_000);
  safe('skipBurnTwo', 'tokens that skip by up to two burnt numbers a run', 500_000);

  const broken = (name: string, what: string): void => {
    it(`${what}: SPIN finds two clients believing at once`, async () => {
      const o = await outcome(name);
      expect(o.errors, describeOutcome(o)).toBeGreaterThan(0);
      expect(o.output).toMatch(/assertion violated/);
      const pair = believers(o.trail);
      expect(pair, `trail:\n${o.trail}`).not.toBeNull();
      // Two different grants, both believed at the same instant.
      expect(pair![0]).toBeGreaterThan(0);
      expect(pair![1]).toBeGreaterThan(0);
      expect(pair![0]).not.toBe(pair![1]);
    }, 180_000);
  };

  broken('fromReply', 'the deadline counted from the reply, not tSent');
  broken('fromReplyStore', "the deadline counted from the reply, on a 'store' clock store");
  broken('skew', 'clocks skewed beyond maxClockSkewMs');
  // Not a deliberate break but a gap in stores that read clock.now() before the request leaves
  // and renew on owner and token alone: an older renewal landing after a newer one moves
  // expiresAt back while the holder keeps the newer deadline (model/README.md).
  broken(
    'twoNowAtSend',
    'two renewals landing out of order, clock.now() read before sending, renew moving expiresAt back',
  );

  broken('permitsBlind', 'a permit picked from a look and written without the CAS checking it');

  // The properties are not vacuous: a takeover by a second client and a stale write refused by
  // the fence are both reachable, in the correct model.
  it('reaches a takeover by a second client', async () => {
    const o = await outcome('takeover');
    expect(o.errors, describeOutcome(o)).toBeGreaterThan(0);
    expect(o.output).toMatch(/assertion violated \(\(firstHolder==0\)/);
  }, 180_000);

  it("finds a paused ex-holder's late data write landing after a newer grant when the store does not compare owner and token", async () => {
    const o = await outcome('dataUnchecked');
    expect(o.errors, describeOutcome(o)).toBeGreaterThan(0);
    expect(o.output).toMatch(/assertion violated \(stok\[0\]==token\[0\]\)/);
  }, 180_000);

  it('reaches a data write landing', async () => {
    const o = await outcome('dataReach');
    expect(o.errors, describeOutcome(o)).toBeGreaterThan(0);
    expect(o.output).toMatch(/assertion violated 0/);
  }, 180_000);

  it('reaches both permits of a name believed at once', async () => {
    const o = await outcome('permitsAll');
    expect(o.errors, describeOutcome(o)).toBeGreaterThan(0);
    expect(o.output).toMatch(/assertion violated 0/);
    expect(o.trail).not.toMatch(/TWO BELIEVERS/);
  }, 180_000);

  it('reaches a grant believed whose token skipped a value', async () => {
    const o = await outcome('skipReach');
    expect(o.errors, describeOutcome(o)).toBeGreaterThan(0);
    expect(o.output).toMatch(/assertion violated \(stok\[s\]<=\(lastGrant/);
  }, 180_000);

  it('reaches the fence refusing a stale write with tokens that skip', async () => {
    const o = await outcome('skipFenceReject');
    expect(o.errors, describeOutcome(o)).toBeGreaterThan(0);
    expect(o.output).toMatch(/assertion violated 0/);
  }, 180_000);

  it('reaches the fence refusing a stale write', async () => {
    const o = await outcome('fenceReject');
    expect(o.errors, describeOutcome(o)).toBeGreaterThan(0);
    expect(o.output).toMatch(/assertion violated 0/);
  }, 180_000);
});
