import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** The header the page sends the admin token in. */
export const ADMIN_HEADER = 'x-leasehold-admin-token';

/**
 * Whether the request carries `token` in `ADMIN_HEADER` (or as `Authorization: Bearer …`). Both
 * sides are hashed first, so the comparison takes the same time whatever the length or the
 * content of the guess.
 */
export function carriesToken(request: IncomingMessage, token: string): boolean {
  const header = request.headers[ADMIN_HEADER];
  const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
  const given = typeof header === 'string' ? header : bearer;
  if (given === undefined) return false;
  return timingSafeEqual(digest(given), digest(token));
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/**
 * Whether the `Host` header names this server (a loopback name, or the host it was bound to): a
 * page on another site that resolves its own name to 127.0.0.1 (DNS rebinding) is refused.
 */
export function hostAllowed(request: IncomingMessage, boundHost: string): boolean {
  const host = request.headers.host;
  if (host === undefined) return false;
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0]!;
  const allowed = new Set(['127.0.0.1', 'localhost', '[::1]', boundHost, `[${boundHost}]`]);
  return allowed.has(name.toLowerCase()) || boundHost === '0.0.0.0' || boundHost === '::';
}
