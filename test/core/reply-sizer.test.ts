import { expect, it } from 'vitest';
import { dataSize, ReplySizer } from '../../src/core/reply-sizer.js';

it('sends a batch whole until records carry data, then pieces of about the budget', () => {
  const sizer = new ReplySizer(256 * 1024, 64);
  expect(sizer.records(10_000)).toBe(10_000); // nothing seen
  sizer.observe(0, 1000);
  expect(sizer.records(10_000)).toBe(10_000); // records without data cost nothing here
  sizer.observe(1000 * 4096, 1000);
  expect(sizer.records(10_000)).toBe(64);
  expect(sizer.records(40)).toBe(40); // a small batch still goes whole
  sizer.observe(100 * 1024, 100); // 1 KiB each: grows back, but not at once
  expect(sizer.records(10_000)).toBe(102);
  for (let i = 0; i < 20; i++) sizer.observe(0, 500);
  expect(sizer.records(10_000)).toBe(10_000);
  sizer.observe(0, 0); // an empty reply says nothing
  expect(sizer.records(10_000)).toBe(10_000);
});

it('counts text twice and bytes once', () => {
  expect(dataSize(null)).toBe(0);
  expect(dataSize(undefined)).toBe(0);
  expect(dataSize('abc')).toBe(6);
  expect(dataSize(new Uint8Array(5))).toBe(5);
});
