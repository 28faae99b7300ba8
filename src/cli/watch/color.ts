/**
 * Whether to colour what goes to `stream`: never with `NO_COLOR` set (non-empty), always with
 * `FORCE_COLOR` set to anything but `0` or `false`, else only on a terminal that is not `dumb`.
 */
export function colorEnabled(
  stream: { isTTY?: boolean },
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  if (env.NO_COLOR) return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined) return force !== '0' && force !== 'false';
  return stream.isTTY === true && env.TERM !== 'dumb';
}

/** SGR codes for the states and events. */
export const COLORS = {
  held: 32,
  'at-risk': 33,
  expired: 31,
  released: 90,
  dim: 90,
  bold: 1,
  handoff: 34,
  acquired: 32,
  renewed: 33,
  removed: 90,
  seen: 90,
} as const;

export function paint(on: boolean, text: string, code: number): string {
  return on && text !== '' ? `\x1b[${code}m${text}\x1b[0m` : text;
}
