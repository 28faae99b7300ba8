import { CANDIDATE_MARK, PERMIT_MARK, QUEUE_MARK, TICKET_MARK } from '../record-key.js';
import { TIMELINE_SCRIPT } from './page-timeline.js';

/**
 * The page's script (inline; no build step, nothing loaded from elsewhere). It keeps the records,
 * spans and events the server streams, and redraws the lease table (virtualised: only the rows in
 * view exist), the timeline (a canvas) and the fleet panel. Names only ever reach the DOM through
 * `textContent` and `dataset`, never as HTML. States are judged as `leaseState` does on the server;
 * record keys are read as `parseKey` (src/cli/record-key.ts) reads them: a name's permits are shown
 * together after its own record, and fair-line records count as internal.
 */
export const PAGE_SCRIPT = String.raw`
'use strict';
(function () {
  var ROW_H = 26, LANE_H = 16, AXIS_H = 18, LABEL_W = 170, MAX_RESOURCE_LANES = 40, MAX_LANES = 80;
  var S = { settings: null, offset: 0, recs: new Map(), spans: new Map(), events: [], fleet: null, error: null };
  var view = { sort: 'resource', dir: 1, prefix: '', owner: '', internal: false, list: [], dirty: true };
  var $ = function (id) { return document.getElementById(id); };
  var el = function (tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  var now = function () { return Date.now() + S.offset; };

  // -- state, as the server's leaseState judges it ------------------------------------------
  function stateOf(x, t) {
    if (x.o === '') return 'released';
    if (t > x.e + S.settings.skewMs) return 'expired';
    var left = x.e - t;
    return left < 0 || left < x.ttl / 2 ? 'at-risk' : 'held';
  }
  var STATE_ORDER = { 'expired': 0, 'at-risk': 1, 'held': 2, 'released': 3 };

  function fmtMs(ms) {
    var a = Math.abs(ms);
    if (a < 1000) return Math.round(ms) + 'ms';
    if (a < 60000) return (Math.round(ms / 100) / 10) + 's';
    if (a < 3600000) return (Math.round(ms / 6000) / 10) + 'm';
    return (Math.round(ms / 360000) / 10) + 'h';
  }
  function fmtTime(t) {
    var d = new Date(t);
    var p = function (n, w) { return String(n).padStart(w || 2, '0'); };
    return p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds()) + '.' + p(d.getMilliseconds(), 3);
  }
  function hue(name) {
    var h = 0x811c9dc5;
    for (var i = 0; i < name.length; i++) { h ^= name.charCodeAt(i); h = Math.imul(h, 0x01000193); }
    h ^= h >>> 16; h = Math.imul(h, 0x85ebca6b); h ^= h >>> 13; h = Math.imul(h, 0xc2b2ae35); h ^= h >>> 16;
    return (h >>> 0) % 360;
  }
  function colour(owner, alpha) {
    return 'hsla(' + hue(owner) + ', 62%, 48%, ' + (alpha === undefined ? 1 : alpha) + ')';
  }
  // -- record keys: a name's permits and fair line, as src/cli/record-key.ts reads them --------
  var PERMIT_MARK = ${JSON.stringify(PERMIT_MARK)}, QUEUE_MARK = ${JSON.stringify(QUEUE_MARK)}, TICKET_MARK = ${JSON.stringify(TICKET_MARK)}, CANDIDATE_MARK = ${JSON.stringify(CANDIDATE_MARK)};
  function parseKey(r) {
    var c = r.indexOf(CANDIDATE_MARK);
    if (c > 0) { var cr = r.slice(c + CANDIDATE_MARK.length), cp = Number(cr.slice(0, cr.indexOf(':'))); if (cr.indexOf(':') >= 0 && isFinite(cp)) return { n: r.slice(0, c), k: 'candidate', i: cp }; }
    var q = r.lastIndexOf(QUEUE_MARK);
    if (q > 0 && /^[0-9]{3}$/.test(r.slice(q + QUEUE_MARK.length))) return { n: r.slice(0, q), k: 'place', i: Number(r.slice(q + QUEUE_MARK.length)) };
    if (r.length > TICKET_MARK.length && r.slice(-TICKET_MARK.length) === TICKET_MARK) return { n: r.slice(0, -TICKET_MARK.length), k: 'ticket', i: 0 };
    var m = r.lastIndexOf(PERMIT_MARK);
    if (m > 0 && /^[1-9][0-9]{0,5}$/.test(r.slice(m + PERMIT_MARK.length))) return { n: r.slice(0, m), k: 'permit', i: Number(r.slice(m + PERMIT_MARK.length)) };
    return { n: r, k: 'permit', i: 0 };
  }
  function keyRank(key) { return key.k === 'permit' ? key.i : key.k === 'place' ? 1e6 + key.i : key.k === 'ticket' ? 2e6 : 3e6; }
  function cmpKeys(a, b) { return cmp(a.n, b.n) || keyRank(a) - keyRank(b) || (a.k === 'candidate' ? b.i - a.i : 0); }
  function isInternal(r) { return r.indexOf('leasehold/') === 0 || parseKey(r).k !== 'permit'; }
  /** A record's key as text, seen alone: permit 0 is the bare name. */
  function keyLabel(r) {
    var key = parseKey(r);
    if (key.k === 'permit') return key.i > 0 ? key.n + ' · permit ' + key.i : key.n;
    if (key.k === 'candidate') return key.n + ' · candidate, priority ' + key.i;
    return key.n + (key.k === 'place' ? ' · fair line' : ' · fair line ticket');
  }
  /** The waiter in a fair-line place's owner (a 16-digit ticket, '|', the waiter). */
  function waiterOf(o) { return /^[0-9]{16}\|/.test(o) ? o.slice(17) : o; }

  // -- data from the stream ------------------------------------------------------------------
  function putRecord(w) {
    S.recs.set(w[0], { r: w[0], o: w[1], t: w[2], e: w[3], ttl: w[4], d: w[6], key: parseKey(w[0]) });
  }
  function putSpans(spans) {
    Object.keys(spans).forEach(function (r) {
      if (spans[r].length === 0) S.spans.delete(r); else S.spans.set(r, spans[r]);
    });
  }
  function onSnapshot(m) {
    S.settings = m.settings;
    S.offset = m.serverNow - Date.now();
    S.recs = new Map();
    S.spans = new Map();
    m.records.forEach(putRecord);
    putSpans(m.spans);
    S.events = m.events.slice();
    S.fleet = m.fleet;
    S.error = m.error;
    view.dirty = true;
    renderAll();
    document.body.dataset.ready = '1';
  }
  function onUpdate(m) {
    S.offset = m.serverNow - Date.now();
    m.records.forEach(putRecord);
    m.removed.forEach(function (r) { S.recs.delete(r); });
    putSpans(m.spans);
    if (m.events.length) {
      S.events = S.events.concat(m.events);
      if (S.events.length > 500) S.events = S.events.slice(-500);
    }
    S.fleet = m.fleet;
    S.error = m.error;
    view.dirty = true;
    renderAll();
  }

  // -- the lease table -----------------------------------------------------------------------
  function visibleRecord(x) {
    if (!view.internal && isInternal(x.r)) return false;
    if (view.prefix && x.r.indexOf(view.prefix) !== 0) return false;
    if (view.owner && x.o.indexOf(view.owner) < 0) return false;
    return true;
  }
  function cmp(a, b) { return a < b ? -1 : a > b ? 1 : 0; }
  // What each row says after its name: 'permit 2' (permit 0 too when the name has others),
  // 'fair line, place 3' (counted over the line's live places by ticket), 'fair line, ticket'.
  function labelParts(list) {
    var withPermits = new Set(), lines = new Map();
    list.forEach(function (x) {
      if (x.key.k === 'permit' && x.key.i > 0) withPermits.add(x.key.n);
      if (x.key.k === 'place' && (x.st === 'held' || x.st === 'at-risk')) {
        if (!lines.has(x.key.n)) lines.set(x.key.n, []);
        lines.get(x.key.n).push(x);
      }
    });
    var places = new Map();
    lines.forEach(function (waiting) {
      waiting.sort(function (a, b) { return cmp(a.o, b.o) || cmp(a.r, b.r); });
      waiting.forEach(function (x, i) { places.set(x.r, i + 1); });
    });
    list.forEach(function (x) {
      if (x.key.k === 'permit') x.part = x.key.i > 0 || withPermits.has(x.key.n) ? 'permit ' + x.key.i : '';
      else if (x.key.k === 'ticket') x.part = 'fair line, ticket';
      else if (x.key.k === 'candidate') x.part = 'candidate, priority ' + x.key.i;
      else x.part = places.has(x.r) ? 'fair line, place ' + places.get(x.r) : 'fair line, free place';
    });
  }
  function rebuild() {
    var t = now();
    var list = [];
    S.recs.forEach(function (x) { if (visibleRecord(x)) list.push(x); });
    var key = view.sort, dir = view.dir;
    list.forEach(function (x) { x.st = stateOf(x, t); });
    labelParts(list);
    list.sort(function (a, b) {
      var d = 0;
      if (key === 'owner') d = cmp(a.o, b.o);
      else if (key === 'token') d = a.t - b.t;
      else if (key === 'left') d = (a.o === '' ? Infinity : a.e) - (b.o === '' ? Infinity : b.e);
      else if (key === 'state') d = STATE_ORDER[a.st] - STATE_ORDER[b.st];
      if (d !== d) d = 0;
      return dir * (d || cmpKeys(a.key, b.key));
    });
    view.list = list;
    view.dirty = false;
    var total = 0;
    S.recs.forEach(function (x) { if (view.internal || !isInternal(x.r)) total++; });
    $('count').textContent = list.length === total ? total + ' records' : list.length + ' of ' + total + ' records';
  }
  var pool = [];
  function renderRows() {
    var vp = $('viewport'), rows = $('rows');
    var list = view.list;
    $('spacer').style.height = Math.max(list.length * ROW_H, ROW_H) + 'px';
    var first = Math.max(0, Math.floor(vp.scrollTop / ROW_H) - 4);
    var last = Math.min(list.length, first + Math.ceil(vp.clientHeight / ROW_H) + 8);
    rows.style.top = first * ROW_H + 'px';
    var empty = $('empty-note');
    if (list.length === 0) {
      if (!empty) { empty = el('div', 'empty'); empty.id = 'empty-note'; rows.appendChild(empty); }
      empty.textContent = S.recs.size === 0 ? 'no lease records' : 'no records match the filters';
    } else if (empty) empty.remove();
    var t = now();
    var n = last - first;
    while (pool.length < n) { pool.push(newRow()); rows.appendChild(pool[pool.length - 1]); }
    for (var i = 0; i < pool.length; i++) {
      if (i < n) { pool[i].hidden = false; fillRow(pool[i], list[first + i], t); }
      else pool[i].hidden = true;
    }
  }
  // Rows are made once and refilled, so a button under the pointer survives the redraws.
  function newRow() {
    var row = el('div', 'grid row');
    row.setAttribute('role', 'row');
    var name = el('div', 'res');
    name.appendChild(document.createTextNode(''));
    name.appendChild(el('span', 'part'));
    name.appendChild(el('span', 'data'));
    var owner = el('div', 'own');
    var dot = el('span', 'dot');
    owner.appendChild(dot);
    owner.appendChild(document.createTextNode(''));
    var left = el('div');
    var bar = el('div', 'bar');
    bar.appendChild(el('i'));
    var none = el('span', 'left', '-');
    left.appendChild(bar);
    left.appendChild(none);
    var stc = el('div');
    stc.appendChild(el('span'));
    var act = el('div');
    if (S.settings.admin) {
      var b = el('button', 'release', 'release');
      b.title = 'force-release this lease (its holder loses it)';
      b.addEventListener('click', function () { forceRelease(row.dataset.resource, Number(row.dataset.token)); });
      act.appendChild(b);
    }
    [name, owner, el('div', 'num'), left, stc, act].forEach(function (c) { row.appendChild(c); });
    return row;
  }
  function setText(node, text) { if (node.textContent !== text) node.textContent = text; }
  function fillRow(row, x, t) {
    var st = stateOf(x, t);
    row.dataset.resource = x.r;
    row.dataset.owner = x.o;
    row.dataset.state = st;
    row.dataset.token = String(x.t);
    row.dataset.name = x.key.n;
    row.dataset.permit = x.key.k === 'permit' ? String(x.key.i) : '';
    row.dataset.part = x.part;
    var c = row.children;
    var owner = x.key.k === 'place' ? waiterOf(x.o) : x.o;
    if (c[0].firstChild.data !== x.key.n) c[0].firstChild.data = x.key.n;
    setText(c[0].children[0], x.part);
    c[0].children[0].hidden = x.part === '';
    // The lease data, as the server cut and escaped it; shown as text, never as HTML.
    setText(c[0].children[1], x.d === null ? '' : x.d);
    c[0].children[1].hidden = x.d === null;
    c[0].title = (x.part ? x.key.n + ' (' + x.part + ')' : x.key.n) + (x.d === null ? '' : '\ndata: ' + x.d);
    var dot = c[1].firstChild;
    dot.hidden = x.o === '';
    dot.style.background = x.o === '' ? '' : colour(owner);
    dot.nextSibling.data = x.o === '' ? '-' : owner;
    c[1].title = x.o;
    setText(c[2], String(x.t));
    var bar = c[3].firstChild, none = c[3].lastChild;
    bar.hidden = x.o === '';
    none.hidden = x.o !== '';
    if (x.o !== '') {
      var fill = bar.firstChild;
      fill.className = 'fill-' + st;
      fill.style.width = Math.max(0, Math.min(100, ((x.e - t) / Math.max(x.ttl, 1)) * 100)) + '%';
      bar.title = 'expires ' + fmtTime(x.e) + ' (' + (x.e >= t ? 'in ' + fmtMs(x.e - t) : fmtMs(t - x.e) + ' ago') + ')';
    }
    var badge = c[4].firstChild;
    badge.className = 'state st-' + st;
    setText(badge, st);
    if (S.settings.admin) c[5].firstChild.hidden = x.o === '';
  }

  // -- force release (only when the server was started with an admin token) -------------------
  function forceRelease(resource, token) {
    var key = 'leasehold-admin-token';
    var secret = sessionStorage.getItem(key) || window.prompt('Admin token (the --admin-token the dashboard was started with):');
    if (!secret) return;
    $('status').textContent = 'releasing ' + resource + '…';
    fetch('/api/release', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Leasehold-Admin-Token': secret },
      body: JSON.stringify({ resource: resource, token: token })
    }).then(function (res) {
      return res.json().then(function (body) { return { status: res.status, body: body }; });
    }).then(function (r) {
      if (r.status === 403) sessionStorage.removeItem(key); else sessionStorage.setItem(key, secret);
      $('status').textContent = r.status === 200
        ? 'released ' + resource + ' (token ' + token + ')'
        : 'not released: ' + (r.body.error || r.status);
    }).catch(function (e) { $('status').textContent = 'release failed: ' + e; });
  }

${TIMELINE_SCRIPT}
  // -- the fleet panel -----------------------------------------------------------------------
  function renderFleet() {
    var f = S.fleet;
    var body = document.querySelector('#members tbody');
    body.textContent = '';
    if (!f) return;
    $('fleet-summary').textContent = f.members.length + ' live members, ' + f.leases + ' live leases';
    var max = 1;
    f.members.forEach(function (m) { max = Math.max(max, m.leases, m.fairShare); });
    f.members.forEach(function (m) {
      var tr = el('tr');
      tr.dataset.member = m.id;
      var name = el('td');
      var dot = el('span', 'dot'); dot.style.background = colour(m.id);
      name.appendChild(dot);
      name.appendChild(document.createTextNode(m.id));
      name.title = 'group ' + m.group + (m.limit === null ? '' : ', at most ' + m.limit + ' leases');
      tr.appendChild(name);
      tr.appendChild(el('td', 'num', String(m.leases)));
      tr.appendChild(el('td', 'num', String(m.fairShare)));
      var cell = el('td');
      var share = el('div', 'share');
      var fill = el('i'); fill.style.width = (m.leases / max) * 100 + '%';
      var mark = el('span', 'mark'); mark.style.left = (m.fairShare / max) * 100 + '%';
      share.title = m.leases + ' held, fair share ' + m.fairShare;
      share.appendChild(fill); share.appendChild(mark);
      cell.appendChild(share);
      tr.appendChild(cell);
      body.appendChild(tr);
    });
    f.others.forEach(function (o) {
      var tr = el('tr');
      tr.appendChild(el('td', '', o.id + ' (not a member)'));
      tr.appendChild(el('td', 'num', String(o.leases)));
      tr.appendChild(el('td', 'num', '-'));
      tr.appendChild(el('td'));
      body.appendChild(tr);
    });
    var list = $('events');
    list.textContent = '';
    var shown = 0;
    for (var i = S.events.length - 1; i >= 0 && shown < 60; i--) {
      var e = S.events[i];
      if (!view.internal && isInternal(e.resource)) continue;
      shown++;
      var li = el('li');
      li.dataset.type = e.type;
      li.dataset.resource = e.resource;
      li.dataset.owner = e.owner;
      li.dataset.token = String(e.token);
      li.appendChild(el('span', 'left', fmtTime(e.at) + ' '));
      li.appendChild(el('span', 'k k-' + e.type, e.type));
      var text = ' ' + keyLabel(e.resource) + '  ';
      if (e.type === 'handoff') text += e.previousOwner + ' → ' + e.owner;
      else if (e.type === 'acquired' && e.previousOwner && e.previousOwner !== e.owner) text += e.owner + ' (after ' + e.previousOwner + ')';
      else text += e.owner || '-';
      text += '  token ' + e.token;
      li.appendChild(document.createTextNode(text));
      list.appendChild(li);
    }
    if (shown === 0) list.appendChild(el('li', 'left', 'no changes seen yet'));
  }

  // -- drawing ---------------------------------------------------------------------------------
  function renderHeader() {
    var err = $('error');
    err.hidden = !S.error;
    err.textContent = S.error || '';
  }
  function renderAll() {
    if (!S.settings) return;
    if (view.dirty) rebuild();
    renderRows();
    drawTimeline();
    renderFleet();
    renderHeader();
  }
  setInterval(function () {
    if (!S.settings) return;
    view.dirty = true;
    rebuild();
    renderRows();
    drawTimeline();
  }, 250);

  document.querySelectorAll('.thead button').forEach(function (b) {
    b.addEventListener('click', function () {
      var key = b.dataset.sort;
      view.dir = view.sort === key ? -view.dir : 1;
      view.sort = key;
      document.querySelectorAll('.thead button').forEach(function (o) { delete o.dataset.dir; });
      b.dataset.dir = view.dir === 1 ? 'asc' : 'desc';
      view.dirty = true;
      renderAll();
    });
  });
  $('f-prefix').addEventListener('input', function (e) { view.prefix = e.target.value; view.dirty = true; $('viewport').scrollTop = 0; renderAll(); });
  $('f-owner').addEventListener('input', function (e) { view.owner = e.target.value; view.dirty = true; $('viewport').scrollTop = 0; renderAll(); });
  $('f-internal').addEventListener('change', function (e) { view.internal = e.target.checked; view.dirty = true; renderAll(); });
  $('t-window').addEventListener('change', drawTimeline);
  $('viewport').addEventListener('scroll', renderRows);
  $('timeline').addEventListener('mousemove', showTip);
  $('timeline').addEventListener('mouseleave', function () { $('tip').hidden = true; });
  window.addEventListener('resize', drawTimeline);

  var source = new EventSource('/events');
  source.addEventListener('snapshot', function (e) { onSnapshot(JSON.parse(e.data)); });
  source.addEventListener('update', function (e) { onUpdate(JSON.parse(e.data)); });
  source.onopen = function () { $('conn').textContent = 'live'; $('conn').className = 'meta ok'; };
  source.onerror = function () { $('conn').textContent = 'reconnecting…'; $('conn').className = 'meta bad'; };
})();
`;
