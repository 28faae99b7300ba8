/**
 * Test helpers: a clock you move by hand, so that no test waits on real time.
 * @module leasehold/testing
 */
export { ManualClock } from './manual-clock.js';
