import { describe, expect, it } from 'vitest';
import {
  GroupCommit,
  MemberFailure,
  nextTurn,
  thisTurn,
  type GroupCommitOptions,
  type GroupReply,
} from '../../src/core/group-commit.js';

interface Call {
  readonly key: string;
  readonly size?: number;
}

/** A group sent and not answered yet: the test settles it. */
interface Sent {
  readonly calls: readonly Call[];
  readonly reply: GroupReply<string>;
}

/** A group commit whose sends are recorded, to be answered by the test. */
function recorded(options: Omit<GroupCommitOptions<Call, string>, 'send'>): {
  group: GroupCommit<Call, string>;
  sent: Sent[];
} {
  const sent: Sent[] = [];
  const group = new GroupCommit<Call, string>({
    ...options,
    send: (calls, reply) => sent.push({ calls, reply }),
  });
  return { group, sent };
}

const keys = (s: Sent): string[] => s.calls.map((c) => c.key);
const echo = (s: Sent): void => s.reply.answer(s.calls.map((c) => `ok:${c.key}`));
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Each promise's outcome, as `value` or `!message`. */
function outcomes(calls: Promise<string>[]): Promise<string[]> {
  return Promise.all(calls.map((call) => call.then(String, (error: Error) => `!${error.message}`)));
}

describe('group commit', () => {
  it('sends the calls of one turn as one group, in the order made, each answered its own part', async () => {
    const { group, sent } = recorded({ schedule: nextTurn });
    const calls = ['a', 'b', 'c'].map((key) => group.run({ key }));
    expect(sent).toHaveLength(0);
    await turn();
    expect(sent.map(keys)).toEqual([['a', 'b', 'c']]);
    echo(sent[0]!);
    expect(await outcomes(calls)).toEqual(['ok:a', 'ok:b', 'ok:c']);
  });

  it('flushes thisTurn once the microtasks queued have run, nextTurn in the next event-loop turn', async () => {
    for (const [schedule, expected] of [
      [thisTurn, [['a'], ['b']]],
      [nextTurn, [['a', 'b']]],
    ] as const) {
      const { group, sent } = recorded({ schedule });
      void group.run({ key: 'a' });
      // A caller resumed later in the same turn, after the microtasks queued with the first call.
      await Promise.resolve();
      await Promise.resolve();
      void group.run({ key: 'b' });
      await turn();
      expect(sent.map(keys)).toEqual(expected);
    }
  });

  it("parts by key with 'apart': one group per key, keys in the order of their first call", async () => {
    const { group, sent } = recorded({
      schedule: thisTurn,
      keying: { mode: 'apart', keyOf: (call) => call.key[0] },
    });
    for (const key of ['x1', 'y1', 'x2', 'z1', 'y2']) void group.run({ key });
    await turn();
    expect(sent.map(keys)).toEqual([['x1', 'x2'], ['y1', 'y2'], ['z1']]);
  });

  it("puts a key at most once per group with 'once': the k-th call of a key in the k-th round", async () => {
    const { group, sent } = recorded({
      schedule: thisTurn,
      keying: { mode: 'once', keyOf: (call) => call.key[0] },
    });
    for (const key of ['a1', 'b1', 'a2', 'a3', 'c1', 'b2']) void group.run({ key });
    await turn();
    expect(sent.map(keys)).toEqual([['a1', 'b1', 'c1'], ['a2', 'b2'], ['a3']]);
  });

  it('cuts a part at its limit, a group always taking its first call', async () => {
    const { group, sent } = recorded({
      schedule: thisTurn,
      keying: { mode: 'apart', keyOf: (call) => call.key[0] },
      limit: { size: (call) => call.size ?? 1, fits: (_count, total) => total <= 4 },
    });
    const calls: Call[] = [
      { key: 'a1', size: 2 },
      { key: 'a2', size: 2 },
      { key: 'b1', size: 9 },
      { key: 'a3', size: 1 },
      { key: 'b2', size: 1 },
    ];
    for (const call of calls) void group.run(call);
    await turn();
    expect(sent.map(keys)).toEqual([['a1', 'a2'], ['a3'], ['b1'], ['b2']]);
  });

  it('tells the limit the count and the largest size, as a group of nested parts needs', async () => {
    const seen: [number, number, number][] = [];
    const { group, sent } = recorded({
      schedule: thisTurn,
      limit: {
        size: (call) => call.size ?? 1,
        fits: (count, total, largest) => {
          seen.push([count, total, largest]);
          return count + largest <= 6;
        },
      },
    });
    for (const size of [1, 3, 1, 2]) void group.run({ key: `s${size}`, size });
    await turn();
    expect(seen).toEqual([
      [2, 4, 3],
      [3, 5, 3],
      [4, 7, 3],
    ]);
    expect(sent.map(keys)).toEqual([['s1', 's3', 's1'], ['s2']]);
  });

  it("fails exactly the failed group's callers; a member's own failure is its alone", async () => {
    const { group, sent } = recorded({
      schedule: thisTurn,
      keying: { mode: 'apart', keyOf: (call) => call.key[0] },
    });
    const calls = ['a1', 'b1', 'a2', 'b2', 'c1', 'c2'].map((key) => group.run({ key }));
    await turn();
    expect(sent.map(keys)).toEqual([
      ['a1', 'a2'],
      ['b1', 'b2'],
      ['c1', 'c2'],
    ]);
    sent[1]!.reply.fail(new Error('b down'));
    echo(sent[0]!);
    sent[2]!.reply.answer([new MemberFailure(new Error('c1 refused')), 'ok:c2']);
    // A second settlement of a group changes nothing.
    sent[1]!.reply.answer(['late', 'late']);
    expect(await outcomes(calls)).toEqual([
      'ok:a1',
      '!b down',
      'ok:a2',
      '!b down',
      '!c1 refused',
      'ok:c2',
    ]);
    expect(group.inFlight).toBe(0);
  });

  it('fails a group whose answer has not one entry per call, never answering a caller with nothing', async () => {
    const { group, sent } = recorded({ schedule: thisTurn });
    const calls = [group.run({ key: 'a' }), group.run({ key: 'b' })];
    await turn();
    sent[0]!.reply.answer(['ok:a']);
    expect(await outcomes(calls)).toEqual([
      '!a group of 2 calls got 1 answers',
      '!a group of 2 calls got 1 answers',
    ]);
    expect(group.inFlight).toBe(0);
  });

  it('fails the group of a send that throws', async () => {
    const group = new GroupCommit<Call, string>({
      schedule: thisTurn,
      send: () => {
        throw new Error('cannot send');
      },
    });
    const calls = [group.run({ key: 'a' }), group.run({ key: 'b' })];
    expect(await outcomes(calls)).toEqual(['!cannot send', '!cannot send']);
    expect(group.inFlight).toBe(0);
  });

  it('flushes while another group is in flight, without waiting for it', async () => {
    const { group, sent } = recorded({ schedule: nextTurn });
    const first = group.run({ key: 'a' });
    await turn();
    expect(group.inFlight).toBe(1);
    const second = group.run({ key: 'b' });
    await turn();
    expect(sent.map(keys)).toEqual([['a'], ['b']]);
    expect(group.inFlight).toBe(2);
    echo(sent[1]!);
    expect(await second).toBe('ok:b');
    expect(group.inFlight).toBe(1);
    echo(sent[0]!);
    expect(await first).toBe('ok:a');
    expect(group.inFlight).toBe(0);
  });

  it('with aloneWhenIdle, sends a lone call at once and gathers while a group is in flight', async () => {
    const { group, sent } = recorded({ schedule: nextTurn, aloneWhenIdle: true });
    const lone = group.run({ key: 'a' });
    expect(sent.map(keys)).toEqual([['a']]); // no turn waited
    const b = group.run({ key: 'b' });
    const c = group.run({ key: 'c' });
    expect(sent).toHaveLength(1);
    await turn();
    expect(sent.map(keys)).toEqual([['a'], ['b', 'c']]);
    echo(sent[0]!);
    echo(sent[1]!);
    expect(await outcomes([lone, b, c])).toEqual(['ok:a', 'ok:b', 'ok:c']);
    // Idle again: the next call goes at once.
    void group.run({ key: 'd' });
    expect(sent.map(keys)).toEqual([['a'], ['b', 'c'], ['d']]);
  });

  it('keeps a group in flight until each part it sent again on its own has settled', async () => {
    const { group, sent } = recorded({ schedule: nextTurn, aloneWhenIdle: true });
    const first = group.run({ key: 'a' });
    const b = group.run({ key: 'b' });
    const c = group.run({ key: 'c' });
    await turn();
    echo(sent[0]!);
    await first;
    let retryB!: (value: string) => void;
    let retryC!: (error: Error) => void;
    sent[1]!.reply.answer([
      new Promise<string>((resolve) => (retryB = resolve)),
      new Promise<string>((_, reject) => (retryC = reject)),
    ]);
    expect(group.inFlight).toBe(1);
    retryB('again:b');
    expect(await b).toBe('again:b');
    expect(group.inFlight).toBe(1);
    // Still in flight: a new call waits for the flush instead of going alone.
    void group.run({ key: 'd' });
    expect(sent).toHaveLength(2);
    retryC(new Error('c refused'));
    expect(await outcomes([c])).toEqual(['!c refused']);
    expect(group.inFlight).toBe(0);
    await turn();
    expect(sent.map(keys)).toEqual([['a'], ['b', 'c'], ['d']]);
  });

  it('answers through callbacks with add, one of them once', async () => {
    const { group, sent } = recorded({ schedule: thisTurn });
    const got: string[] = [];
    group.add(
      { key: 'a' },
      (value) => got.push(value),
      () => got.push('rejected'),
    );
    group.add(
      { key: 'b' },
      () => got.push('resolved'),
      (error: unknown) => got.push(`!${(error as Error).message}`),
    );
    await turn();
    sent[0]!.reply.answer(['ok:a', new MemberFailure(new Error('b'))]);
    sent[0]!.reply.fail(new Error('late'));
    expect(got).toEqual(['ok:a', '!b']);
  });
});
