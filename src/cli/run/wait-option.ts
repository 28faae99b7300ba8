import { InvalidArgumentError } from 'commander';
import { parseDuration } from '../duration.js';

/** `--wait`: a duration (`0` tries once) or `forever`. */
export function waitOption(text: string): number {
  const value = text.trim();
  if (value === 'forever') return Infinity;
  if (value === '0') return 0;
  try {
    return parseDuration(value);
  } catch (error) {
    if (!(error instanceof InvalidArgumentError)) throw error;
    throw new InvalidArgumentError(`${error.message}; or "forever", or 0 to try once`);
  }
}
