/**
 * Text from a store (resource and owner names may hold any character but NUL) made safe for a
 * terminal: control characters (C0, DEL, C1), line and paragraph separators, bidirectional
 * overrides and isolates, and lone surrogates become visible escapes (`\x1b`, `\n`, `\u202e`).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\0-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]/gu;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeChar(char: string): string {
  const code = char.charCodeAt(0);
  return NAMED[char] ?? (code <= 0xff ? `\\x${hex(code, 2)}` : `\\u${hex(code, 4)}`);
}

function hex(code: number, width: number): string {
  return code.toString(16).padStart(width, '0');
}

/** Whether `text` holds a character `visible` would escape, other than `\`. */
export function hasUnsafe(text: string): boolean {
  return new RegExp(UNSAFE.source, 'u').test(text);
}

/** `text` with unsafe characters escaped, and `\` doubled so every escape is unambiguous. */
export function visible(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(UNSAFE, escapeChar);
}

/** `text` in double quotes, escaped as `visible` does, with `"` escaped too. */
export function quoted(text: string): string {
  return `"${visible(text).replace(/"/g, '\\"')}"`;
}

/**
 * A last guard for a line built elsewhere (an error message that may quote a name with
 * `JSON.stringify`, which leaves C1 controls and bidi overrides raw): escapes unsafe characters but
 * neither `\` nor a line break, which the message's own quoting and layout already use.
 */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, (char) => (char === '\n' ? char : escapeChar(char)));
}
