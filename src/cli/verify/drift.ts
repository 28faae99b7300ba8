import { InvalidArgumentError } from 'commander';
import { driftMs } from '../../core/time.js';

/**
 * The `drift` fault's rate when `--drift` is not given: 1 % slow, the proportional part of rule 2's
 * allowance (1 % of the TTL + 2 ms), so within it at every TTL.
 */
export const DEFAULT_DRIFT_RATE = -0.01;

/** The largest rate `--drift` takes either way (±50 %). */
export const MAX_DRIFT_RATE = 0.5;

const PERCENT = /^([+-]?\d+(?:\.\d+)?)%$/;

/**
 * A commander parser for `--drift <rate>`: a percentage, `0.5%` (fast), `-3%` (slow), from -50% to
 * +50%; returns the rate as a fraction (`-0.03`).
 */
export function parseDriftRate(text: string): number {
  const value = text.trim();
  if (/^[+-]?\d+(?:\.\d+)?$/.test(value))
    throw new InvalidArgumentError(
      `"${value}" has no %; write the rate in percent, e.g. ${value}% (fast) or -${value.replace(/^[+-]/, '')}% (slow)`,
    );
  const match = PERCENT.exec(value);
  if (!match)
    throw new InvalidArgumentError(
      `"${value}" is not a rate; write a percentage, e.g. 0.5% (a clock running fast) or -3% (slow)`,
    );
  const rate = Number(match[1]) / 100 + 0; // + 0: -0% is 0
  if (Math.abs(rate) > MAX_DRIFT_RATE)
    throw new InvalidArgumentError(`"${value}" is out of range; allowed from -50% to +50%`);
  return rate;
}

/** `-20%`, `+0.5%`, `0%`: a rate as `--drift` takes it. */
export function formatRate(rate: number): string {
  const pct = Math.round(rate * 100 * 1000) / 1000;
  return `${pct > 0 ? '+' : ''}${pct}%`;
}

/**
 * How far a clock running at `rate` falls behind a true one while the true one measures `ttlMs`
 * (0 for a clock running fast: its holder stops believing early, which rule 2 needs no allowance
 * for).
 */
export function slowByOverTtl(rate: number, ttlMs: number): number {
  return rate < 0 ? -rate * ttlMs : 0;
}

/**
 * Rule 2's drift allowance (`driftMs(ttl)` = 1 % of the TTL + 2 ms) covers a holder's clock running
 * slow by at most that much while the store measures one TTL; a slower clock is beyond it, and its
 * holder may believe past the store's expiry.
 */
export function driftIsBeyond(rate: number, ttlMs: number): boolean {
  return slowByOverTtl(rate, ttlMs) > driftMs(ttlMs);
}

/**
 * What a drift amounts to against the allowance, for the verdict:
 * `clocks -20% (200 ms slow over a TTL of 1000 ms > 12 ms = 1 % of the TTL + 2 ms)`.
 */
export function driftBeyondText(rate: number, ttlMs: number): string {
  const slow = Math.round(slowByOverTtl(rate, ttlMs) * 10) / 10;
  const allowance = driftMs(ttlMs);
  return `clocks ${formatRate(rate)} (${slow} ms slow over a TTL of ${ttlMs} ms ${slow > allowance ? '>' : '≤'} ${allowance} ms = 1 % of the TTL + 2 ms)`;
}

/**
 * Which workers drift: the odd-numbered ones (w01, w03, ...), so every holder has peers whose clocks
 * run at the other rate; the rest keep the host's.
 */
export function drifts(workerNumber: number): boolean {
  return workerNumber % 2 === 1;
}
