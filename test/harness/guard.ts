import { afterEach } from 'vitest';

// Fails the test during which a promise rejection went unhandled, naming it, instead of
// letting it surface later as a stray error (a timer that throws is a bug in leasehold).
const unhandled: unknown[] = [];
process.on('unhandledRejection', (reason) => unhandled.push(reason));

afterEach(async () => {
  await new Promise((r) => setImmediate(r));
  if (unhandled.length > 0) {
    const reasons = unhandled
      .splice(0)
      .map((r) => (r instanceof Error ? (r.stack ?? r.message) : String(r)));
    throw new Error(`unhandled rejection during this test:\n${reasons.join('\n')}`);
  }
});
