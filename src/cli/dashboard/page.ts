import { formatDuration } from '../duration.js';
import { escapeHtml } from '../html-escape.js';
import { PAGE_SCRIPT } from './page-bundle.js';
import { PAGE_STYLE } from './page-style.js';
import type { PageSettings } from './wire.js';

/**
 * The one page: HTML, style and script inline, nothing loaded from elsewhere. The only values the
 * server writes into it are the redacted store URL and the settings, escaped; every resource and
 * owner name reaches the page as data and is set with `textContent`.
 */
export function pageHtml(settings: PageSettings, nonce: string): string {
  const mode = `polling every ${formatDuration(settings.pollMs)}${settings.watch ? ' + the store’s watch' : ''}`;
  const clock =
    settings.clock === 'store'
      ? 'expiry on the store’s clock, compared with this machine’s'
      : 'expiry on the clients’ clocks';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>leasehold dashboard</title>
<style nonce="${nonce}">${PAGE_STYLE}</style>
</head>
<body>
<header>
  <h1>leasehold</h1>
  <span class="meta" id="store" title="store">${escapeHtml(settings.store)}</span>
  <span class="meta" id="mode">${escapeHtml(mode)}</span>
  <span class="meta">${escapeHtml(`${clock}; skew allowance ${formatDuration(settings.skewMs)}`)}</span>
  <span class="meta" id="conn">connecting…</span>
  <span id="error" hidden></span>
</header>
<main>
<section id="leases-panel">
  <h2>Leases <small id="count"></small></h2>
  <div class="filters">
    <input type="text" id="f-prefix" placeholder="resource prefix" aria-label="resource prefix">
    <input type="text" id="f-owner" placeholder="owner contains" aria-label="owner">
    <label><input type="checkbox" id="f-internal"> show leasehold/ records and fair lines</label>
  </div>
  <div id="table" role="table">
    <div class="grid thead" role="row">
      <button data-sort="resource" data-dir="asc">resource</button>
      <button data-sort="owner">owner</button>
      <button data-sort="token">token</button>
      <button data-sort="left">time left</button>
      <button data-sort="state">state</button>
      <span>${settings.admin ? 'action' : ''}</span>
    </div>
    <div id="viewport"><div id="spacer"><div id="rows"></div></div></div>
  </div>
  <div id="status"></div>
</section>
<section id="fleet-panel">
  <h2>Fleet <small id="fleet-summary"></small></h2>
  <table id="members"><thead><tr><th>member</th><th class="num">leases</th><th class="num">fair</th><th></th></tr></thead><tbody></tbody></table>
  <h2 class="second">Recent events</h2>
  <ol id="events"></ol>
</section>
<section id="timeline-panel">
  <h2>Ownership timeline <small id="lanes-note"></small></h2>
  <div class="filters">
    <label>last <select id="t-window">
      <option value="60000">1 minute</option>
      <option value="120000" selected>2 minutes</option>
      <option value="300000">5 minutes</option>
    </select></label>
    <span class="legend">bars: who held it (colour per owner) · gaps: nobody held it · dark tick: new token · red end: expired</span>
  </div>
  <div id="timeline-wrap"><canvas id="timeline" height="60"></canvas><div id="tip" hidden></div></div>
</section>
</main>
<script nonce="${nonce}">${PAGE_SCRIPT}</script>
</body>
</html>
`;
}
