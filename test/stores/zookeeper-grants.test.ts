import { describe, expect, it } from 'vitest';
import { ZkGrants, type KnownGrant } from '../../src/stores/zookeeper/zookeeper-grants.js';
import type { ZkSession } from '../../src/stores/zookeeper/zookeeper-session.js';

const session = {} as ZkSession; // never called: the memory only hands it back
const grant = (token: number, recordVersion: number, until = Infinity): KnownGrant => ({
  owner: 'a',
  token,
  recordVersion,
  session,
  until,
});

describe('zookeeper grant memory', () => {
  it('answers only for the same owner and token', () => {
    const grants = new ZkGrants();
    grants.note('/h', grant(3, 7));
    expect(grants.of('/h', { resource: 'r', owner: 'a', token: 3 })).toMatchObject({
      recordVersion: 7,
    });
    expect(grants.of('/h', { resource: 'r', owner: 'mallory', token: 3 })).toBeUndefined();
    expect(grants.of('/h', { resource: 'r', owner: 'a', token: 2 })).toBeUndefined();
    expect(grants.of('/other', { resource: 'o', owner: 'a', token: 3 })).toBeUndefined();
  });

  it('keeps the latest write: an older answer arriving late changes nothing', () => {
    const grants = new ZkGrants();
    grants.note('/h', grant(3, 9));
    grants.note('/h', grant(3, 8)); // a renewal answered after a later one
    grants.note('/h', grant(2, 12)); // an older grant
    expect(grants.of('/h', { resource: 'r', owner: 'a', token: 3 })?.recordVersion).toBe(9);
    grants.note('/h', grant(4, 10));
    expect(grants.of('/h', { resource: 'r', owner: 'a', token: 3 })).toBeUndefined();
    expect(grants.of('/h', { resource: 'r', owner: 'a', token: 4 })?.recordVersion).toBe(10);
  });

  it('forgets a grant only by its own token', () => {
    const grants = new ZkGrants();
    grants.note('/h', grant(4, 10));
    grants.forget('/h', 3);
    expect(grants.of('/h', { resource: 'r', owner: 'a', token: 4 })).toBeDefined();
    grants.forget('/h', 4);
    expect(grants.of('/h', { resource: 'r', owner: 'a', token: 4 })).toBeUndefined();
  });

  it('drops grants nobody believes in any more once it holds many', () => {
    const grants = new ZkGrants();
    const past = performance.now() - 1;
    for (let i = 0; i < 1000; i++) grants.note(`/gone/${i}`, grant(1, 1, past));
    for (let i = 0; i < 23; i++) grants.note(`/kept/${i}`, grant(1, 1));
    expect(grants.of('/gone/0', { resource: 'r', owner: 'a', token: 1 })).toBeDefined();
    grants.note('/kept/last', grant(1, 1)); // the 1024th: a sweep
    expect(grants.of('/gone/0', { resource: 'r', owner: 'a', token: 1 })).toBeUndefined();
    expect(grants.of('/gone/999', { resource: 'r', owner: 'a', token: 1 })).toBeUndefined();
    expect(grants.of('/kept/0', { resource: 'r', owner: 'a', token: 1 })).toBeDefined();
    expect(grants.of('/kept/last', { resource: 'r', owner: 'a', token: 1 })).toBeDefined();
  });
});
