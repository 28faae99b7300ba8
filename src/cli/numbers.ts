import { InvalidArgumentError } from 'commander';

/** A commander argument parser for a whole number within `[min, max]`. */
export function integerOption(min: number, max: number): (text: string) => number {
  return (text) => {
    const value = text.trim();
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
      throw new InvalidArgumentError(`"${text}" is not a whole number`);
    }
    const n = Number(value);
    if (n < min || n > max) {
      throw new InvalidArgumentError(`"${text}" is out of range; allowed from ${min} to ${max}`);
    }
    return n;
  };
}
