import { describe, expect, it } from 'vitest';
import { OwnWrites } from '../../src/stores/nats/nats-writes.js';

// What the NATS store notes of releases: each note is only the condition of one write (a stale
// one costs a read), so what is tested here is which note the next acquire gets and what the
// notes may hold, not safety, which the server's conditional write keeps.

const release = (revision: number, token = 1, data: string | null = null) => ({
  token,
  revision,
  data,
});

describe('OwnWrites: releases the watch saw', () => {
  it('gives the later of our own note and the watch’s, once; a grant seen since drops an older one', () => {
    const writes = new OwnWrites();
    writes.rememberReleased('a', release(10));
    writes.noteReleased('a', release(12, 2));
    expect(writes.takeReleased('a')).toEqual(release(12, 2));
    expect(writes.takeReleased('a')).toBeUndefined();

    writes.noteReleased('b', release(5));
    writes.noteReleased('b', release(4)); // a replay of an older value: ignored
    writes.takenAt('b', 5); // the same revision is the note itself, not a later grant
    expect(writes.takeReleased('b')).toEqual(release(5));

    writes.noteReleased('c', release(5));
    writes.rememberReleased('d', release(6));
    writes.takenAt('c', 7);
    writes.takenAt('d', 8);
    expect(writes.takeReleased('c')).toBeUndefined();
    expect(writes.takeReleased('d')).toBeUndefined();
  });

  it('notes no record with more than 1 KiB of data, and forgets every note when the watch is lost', () => {
    const writes = new OwnWrites();
    writes.noteReleased('big', release(1, 1, 'x'.repeat(1025)));
    writes.noteReleased('small', release(1, 1, 'x'.repeat(1024)));
    writes.rememberReleased('own', release(3));
    expect(writes.takeReleased('big')).toBeUndefined();
    writes.noteReleased('again', release(2));
    writes.forgetSeen();
    expect(writes.takeReleased('small')).toBeUndefined();
    expect(writes.takeReleased('again')).toBeUndefined();
    // Our own releases are not the watch's to forget.
    expect(writes.takeReleased('own')).toEqual(release(3));
  });

  it('keeps at most 100,000 notes and 16 MiB, dropping the oldest first', () => {
    const writes = new OwnWrites();
    for (let i = 0; i < 100_005; i++) writes.noteReleased(`r/${i}`, release(i + 1));
    for (let i = 0; i < 5; i++) expect(writes.takeReleased(`r/${i}`)).toBeUndefined();
    expect(writes.takeReleased('r/5')).toEqual(release(6));
    expect(writes.takeReleased('r/100004')).toEqual(release(100_005));

    const bytes = new OwnWrites();
    const data = 'd'.repeat(1000);
    // About 1,070 bytes each: 16 MiB holds about 15,670 of them, the last ones.
    for (let i = 0; i < 20_000; i++) bytes.noteReleased(`k/${i}`, release(i + 1, 1, data));
    expect(bytes.takeReleased('k/0')).toBeUndefined();
    expect(bytes.takeReleased('k/4000')).toBeUndefined();
    expect(bytes.takeReleased('k/5000')).toEqual(release(5001, 1, data));
    expect(bytes.takeReleased('k/19999')).toEqual(release(20_000, 1, data));
  });
});
