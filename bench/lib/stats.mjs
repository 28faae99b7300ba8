// Small statistics for the benchmark reports: quantiles, medians and a median with its range.

/** The `q` quantile (0…1) of `xs`, linear between ranks; NaN for no values. */
export function quantile(xs, q) {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const at = (s.length - 1) * q;
  const lo = Math.floor(at);
  return s[lo] + (s[Math.ceil(at)] - s[lo]) * (at - lo);
}

export const median = (xs) => quantile(xs, 0.5);

/** `{ median, min, max, n }`, rounded to `digits`, of the finite values in `xs`. */
export function spread(xs, digits = 3) {
  const finite = xs.filter(Number.isFinite);
  if (finite.length === 0) return null;
  const round = (x) => Number(x.toFixed(digits));
  return {
    median: round(median(finite)),
    min: round(Math.min(...finite)),
    max: round(Math.max(...finite)),
    n: finite.length,
  };
}

/** `{ p50, p99, max, n }` of latencies in ms. */
export function latencies(ms) {
  const round = (x) => Math.round(x * 10) / 10;
  return ms.length === 0
    ? null
    : {
        p50: round(quantile(ms, 0.5)),
        p99: round(quantile(ms, 0.99)),
        max: round(ms.reduce((a, b) => Math.max(a, b), -Infinity)), // no spread: >100k samples
        n: ms.length,
      };
}

/** The numbers 0 … n − 1 in an order fixed by `seed`. */
export function shuffled(n, seed) {
  const out = Array.from({ length: n }, (_, i) => i);
  let state = Math.imul(seed + 1, 2654435761) >>> 0;
  for (let i = n - 1; i > 0; i--) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    const j = (state >>> 16) % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
