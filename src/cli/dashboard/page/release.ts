import { byId } from './dom.js';

const TOKEN_KEY = 'leasehold-admin-token';

/**
 * Force-releases one grant (only offered when the server was started with an admin token): asks
 * for the token once per tab, keeps it for the tab unless the server refused it, and says in the
 * status line what happened.
 */
export function forceRelease(resource: string, token: number): void {
  const secret =
    sessionStorage.getItem(TOKEN_KEY) ||
    window.prompt('Admin token (the --admin-token the dashboard was started with):');
  if (!secret) return;
  const status = byId('status');
  status.textContent = `releasing ${resource}…`;
  fetch('/api/release', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Leasehold-Admin-Token': secret },
    body: JSON.stringify({ resource, token }),
  })
    .then((res) => res.json().then((body: { error?: string }) => ({ status: res.status, body })))
    .then((r) => {
      if (r.status === 403) sessionStorage.removeItem(TOKEN_KEY);
      else sessionStorage.setItem(TOKEN_KEY, secret);
      byId('status').textContent =
        r.status === 200
          ? `released ${resource} (token ${token})`
          : `not released: ${r.body.error || r.status}`;
    })
    .catch((e: unknown) => {
      byId('status').textContent = `release failed: ${String(e)}`;
    });
}
