import type { Clock } from '../core/time.js';

/** Waits for every promise to settle, or for `ms` to pass, whichever is first. */
export async function settleWithin(
  promises: readonly (Promise<unknown> | undefined)[],
  ms: number,
  clock: Clock,
): Promise<void> {
  const pending = promises.filter((p): p is Promise<unknown> => p !== undefined);
  if (pending.length === 0) return;
  let timer: { clear(): void } | undefined;
  await Promise.race([
    Promise.allSettled(pending),
    new Promise<void>((resolve) => {
      timer = clock.setTimeout(resolve, ms);
    }),
  ]);
  timer?.clear();
}

/** The longest prefix shared by every name (whole code points). */
export function commonPrefix(names: readonly string[]): string {
  if (names.length === 0) return '';
  let prefix = Array.from(names[0]!);
  for (const name of names) {
    const chars = Array.from(name);
    let i = 0;
    while (i < prefix.length && i < chars.length && prefix[i] === chars[i]) i++;
    prefix = prefix.slice(0, i);
    if (prefix.length === 0) break;
  }
  return prefix.join('');
}
