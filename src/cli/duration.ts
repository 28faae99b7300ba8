import { InvalidArgumentError } from 'commander';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;

/** Parses a human duration (`500ms`, `20s`, `1.5s`, `2m`, `1h`) into whole milliseconds. */
export function parseDuration(text: string): number {
  const value = text.trim();
  if (/^\d+(?:\.\d+)?$/.test(value)) {
    throw new InvalidArgumentError(
      `"${value}" has no unit; add one, e.g. ${value}s or ${value}ms (units: ms, s, m, h)`,
    );
  }
  const match = DURATION.exec(value);
  if (!match) {
    throw new InvalidArgumentError(
      `"${value}" is not a duration; write a number and a unit, e.g. 500ms, 20s, 1.5s, 2m, 1h`,
    );
  }
  const ms = Number(match[1]) * UNITS[match[2]!]!;
  if (!Number.isSafeInteger(ms)) {
    throw new InvalidArgumentError(`"${value}" is not a whole number of milliseconds`);
  }
  return ms;
}

/** A commander argument parser for a duration within `[minMs, maxMs]`. */
export function durationOption(minMs: number, maxMs: number): (text: string) => number {
  return (text) => {
    const ms = parseDuration(text);
    if (ms < minMs || ms > maxMs) {
      throw new InvalidArgumentError(
        `"${text}" is out of range; allowed from ${formatDuration(minMs)} to ${formatDuration(maxMs)}`,
      );
    }
    return ms;
  };
}

/** `850ms`, `12.3s`, `2.5m`, `1.2h`: short and readable, one decimal at most. */
export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1000) return `${Math.round(ms)}ms`;
  if (abs < 60_000) return `${trim(ms / 1000)}s`;
  if (abs < 3_600_000) return `${trim(ms / 60_000)}m`;
  return `${trim(ms / 3_600_000)}h`;
}

/** `in 12.3s` for a future instant, `3.1s ago` for a past one. */
export function formatRelative(deltaMs: number): string {
  return deltaMs >= 0 ? `in ${formatDuration(deltaMs)}` : `${formatDuration(-deltaMs)} ago`;
}

function trim(n: number): string {
  return (Math.round(n * 10) / 10).toString();
}
