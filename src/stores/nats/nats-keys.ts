/**
 * The key layout. A NATS KV key allows only `[-/=._A-Za-z0-9]` and `.` separates its tokens,
 * which subject filters match whole. A resource's key is one token per UTF-8 byte, in two lower-case
 * hex digits, then a last token `_`: `ab` is `61.62._`. Every byte prefix of a name is then a
 * token prefix of its key, so `list` and `watch` filter by name prefix on the server
 * (`61.>` matches `a` itself, `ab` and every other name starting with `a`), and the largest name
 * (512 bytes) gives a key of 1,538 characters, well within a NATS subject.
 */
const END = '_';

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));

/** The key of `resource`. */
export function keyOf(resource: string): string {
  const bytes = Buffer.from(resource, 'utf8');
  const tokens = new Array<string>(bytes.length + 1);
  for (let i = 0; i < bytes.length; i++) tokens[i] = HEX[bytes[i]!]!;
  tokens[bytes.length] = END;
  return tokens.join('.');
}

/** The subject filter matching the keys of every resource that starts with `prefix`. */
export function filterOf(prefix: string): string {
  if (prefix === '') return '>';
  return `${keyOf(prefix).slice(0, -END.length)}>`;
}

/** The resource a key names; `undefined` for a key this layout never writes. */
export function resourceOf(key: string): string | undefined {
  const tokens = key.split('.');
  if (tokens.length < 2 || tokens.pop() !== END) return undefined;
  const bytes = Buffer.allocUnsafe(tokens.length);
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (!/^[0-9a-f]{2}$/.test(token)) return undefined;
    bytes[i] = parseInt(token, 16);
  }
  const resource = bytes.toString('utf8');
  return keyOf(resource) === key ? resource : undefined; // refuses bytes that are not UTF-8
}
