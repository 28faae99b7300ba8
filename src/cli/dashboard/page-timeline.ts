/**
 * The timeline part of the page's script (spliced into `PAGE_SCRIPT`, whose variables it uses): one
 * lane per resource, or per owner when there are many, drawn on a canvas; hover shows who held it,
 * with which token, from when to when.
 */
export const TIMELINE_SCRIPT = String.raw`
  // -- the ownership timeline ----------------------------------------------------------------
  var lanes = [];
  function buildLanes() {
    var names = [];
    S.spans.forEach(function (_s, r) { names.push(r); });
    names = names.filter(function (r) {
      if (!view.internal && isInternal(r)) return false;
      if (view.prefix && r.indexOf(view.prefix) !== 0) return false;
      if (!view.owner) return true;
      return S.spans.get(r).some(function (s) { return s[0].indexOf(view.owner) >= 0; });
    });
    names.sort(function (a, b) { return cmpKeys(parseKey(a), parseKey(b)); });
    if (names.length <= MAX_RESOURCE_LANES) {
      $('lanes-note').textContent = 'one lane per resource';
      return names.map(function (r) { return { label: keyLabel(r), kind: 'resource', spans: S.spans.get(r).map(function (s) { return { r: r, s: s }; }) }; });
    }
    var byOwner = new Map();
    names.forEach(function (r) {
      S.spans.get(r).forEach(function (s) {
        if (view.owner && s[0].indexOf(view.owner) < 0) return;
        if (!byOwner.has(s[0])) byOwner.set(s[0], []);
        byOwner.get(s[0]).push({ r: r, s: s });
      });
    });
    var owners = Array.from(byOwner.keys()).sort(cmp);
    $('lanes-note').textContent = 'one lane per owner (' + names.length + ' resources)' + (owners.length > MAX_LANES ? '; first ' + MAX_LANES + ' owners' : '');
    return owners.slice(0, MAX_LANES).map(function (o) { return { label: o, kind: 'owner', spans: byOwner.get(o) }; });
  }
  function drawTimeline() {
    var canvas = $('timeline');
    var wrap = $('timeline-wrap');
    lanes = buildLanes();
    var width = Math.max(300, wrap.clientWidth);
    var height = AXIS_H + Math.max(1, lanes.length) * LANE_H + 4;
    var ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.height = height + 'px';
    var g = canvas.getContext('2d');
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, height);
    g.font = '11px system-ui, sans-serif';
    var span = Number($('t-window').value), t1 = now(), t0 = t1 - span;
    var plotW = width - LABEL_W - 8;
    var x = function (t) { return LABEL_W + ((Math.max(t0, Math.min(t1, t)) - t0) / span) * plotW; };
    g.fillStyle = '#6b7385';
    for (var k = 0; k <= 6; k++) {
      var tx = t0 + (span * k) / 6;
      var px = x(tx);
      g.fillRect(px, AXIS_H - 4, 1, 4);
      g.fillText(k === 6 ? 'now' : '-' + fmtMs(t1 - tx), Math.min(px + 2, width - 30), 11);
    }
    if (lanes.length === 0) { g.fillText('no ownership seen yet', LABEL_W, AXIS_H + 12); return; }
    lanes.forEach(function (lane, i) {
      var y = AXIS_H + i * LANE_H;
      g.fillStyle = i % 2 ? '#f7f8fa' : '#eef0f3';
      g.fillRect(LABEL_W, y, plotW, LANE_H - 2);
      g.fillStyle = '#1d2330';
      var label = lane.label.length > 26 ? lane.label.slice(0, 25) + '…' : lane.label;
      g.fillText(label, 4, y + 11);
      lane.spans.forEach(function (item) {
        var s = item.s;
        var end = s[3] === null ? t1 : s[3];
        if (end < t0) return;
        var a = x(s[2]), b = Math.max(x(end), a + 1);
        g.fillStyle = colour(s[0], lane.kind === 'owner' ? 0.55 : 1);
        g.fillRect(a, y + 1, b - a, LANE_H - 4);
        if (s[2] >= t0) { g.fillStyle = '#1d2330'; g.fillRect(a, y, 2, LANE_H - 2); }
        if (s[4] === 'expired') { g.fillStyle = '#d64545'; g.fillRect(b - 3, y, 3, LANE_H - 2); }
      });
    });
  }
  function showTip(ev) {
    var tip = $('tip'), canvas = $('timeline');
    var rect = canvas.getBoundingClientRect();
    var px = ev.clientX - rect.left, py = ev.clientY - rect.top;
    var i = Math.floor((py - AXIS_H) / LANE_H);
    var lane = lanes[i];
    var width = rect.width, plotW = width - LABEL_W - 8;
    if (!lane || px < LABEL_W) { tip.hidden = true; return; }
    var span = Number($('t-window').value), t1 = now(), t = t1 - span + ((px - LABEL_W) / plotW) * span;
    var hits = lane.spans.filter(function (item) {
      var s = item.s; return s[2] <= t && (s[3] === null ? t1 : s[3]) >= t;
    });
    var lines;
    if (lane.kind === 'resource') {
      lines = [lane.label + '  at ' + fmtTime(t)];
      if (hits.length === 0) lines.push('nobody held it');
      hits.forEach(function (item) { lines.push(spanText(item.s)); });
    } else {
      lines = [lane.label + '  at ' + fmtTime(t), hits.length + ' lease(s) held'];
      hits.slice(0, 8).forEach(function (item) { lines.push(keyLabel(item.r) + '  token ' + item.s[1]); });
      if (hits.length > 8) lines.push('…');
    }
    tip.textContent = lines.join('\n');
    tip.hidden = false;
    tip.style.left = Math.min(px + 12, width - 260) + 'px';
    tip.style.top = py + 14 + 'px';
  }
  function spanText(s) {
    return 'owner ' + s[0] + '  token ' + s[1] + '\nfrom ' + fmtTime(s[2]) + (s[3] === null ? ' (still held)' : ' to ' + fmtTime(s[3]) + ' (' + s[4] + ')');
  }

`;
