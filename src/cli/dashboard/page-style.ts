/** The page's style sheet (inline: the page loads nothing else). */
export const PAGE_STYLE = String.raw`
:root { --bg:#f6f7f9; --panel:#fff; --ink:#1d2330; --dim:#6b7385; --line:#e1e4ea;
  --held:#2f9e44; --risk:#e8a317; --expired:#d64545; --released:#9aa1ae; }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0; font: 13px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; background: var(--bg); color: var(--ink); }
header { display: flex; gap: 16px; align-items: baseline; padding: 10px 16px; background: #1d2330; color: #fff; flex-wrap: wrap; }
header h1 { font-size: 16px; margin: 0; }
header .meta { color: #c5cad6; }
#conn.ok { color: #8ce99a; } #conn.bad { color: #ffa8a8; }
#error { background: #c92a2a; color: #fff; padding: 2px 8px; border-radius: 3px; }
main { display: grid; grid-template-columns: minmax(0, 3fr) minmax(280px, 1fr); gap: 12px; padding: 12px; }
section { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; min-width: 0; }
#timeline-panel { grid-column: 1 / 3; }
h2 { font-size: 14px; margin: 0 0 8px; display: flex; gap: 8px; align-items: baseline; }
h2 small { color: var(--dim); font-weight: normal; }
.filters { display: flex; gap: 8px; margin-bottom: 8px; flex-wrap: wrap; align-items: center; }
.filters input[type=text] { padding: 4px 6px; border: 1px solid var(--line); border-radius: 4px; min-width: 160px; }
.grid { display: grid; grid-template-columns: minmax(120px, 3fr) minmax(80px, 2fr) 70px minmax(120px, 2fr) 80px 70px; align-items: center; }
.thead { font-weight: 600; border-bottom: 1px solid var(--line); }
.thead button { all: unset; cursor: pointer; padding: 4px 6px; }
.thead button[data-dir]::after { content: " \25B2"; font-size: 9px; }
.thead button[data-dir=desc]::after { content: " \25BC"; }
#viewport { height: 440px; overflow-y: auto; position: relative; }
#spacer { position: relative; }
#rows { position: absolute; left: 0; right: 0; top: 0; }
.row { height: 26px; border-bottom: 1px solid #f0f1f4; }
.row > div { padding: 0 6px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.row .data { margin-left: 8px; color: #5b6477; font-family: ui-monospace, monospace; font-size: 11px; }
.row .part { margin-left: 8px; padding: 0 5px; border-radius: 3px; background: #eef1f6; color: #475069; font-size: 11px; }
.row .num { text-align: right; font-variant-numeric: tabular-nums; }
.dot { display: inline-block; width: 8px; height: 8px; border-radius: 50%; margin-right: 5px; }
.bar { position: relative; height: 10px; background: #edf0f4; border-radius: 5px; overflow: hidden; }
.bar > i { position: absolute; left: 0; top: 0; bottom: 0; border-radius: 5px; }
.left { font-size: 11px; color: var(--dim); }
.state { font-size: 11px; font-weight: 600; padding: 1px 6px; border-radius: 8px; color: #fff; }
.st-held { background: var(--held); } .st-at-risk { background: var(--risk); }
.st-expired { background: var(--expired); } .st-released { background: var(--released); }
.fill-held { background: var(--held); } .fill-at-risk { background: var(--risk); } .fill-expired { background: var(--expired); }
.row button { font-size: 11px; }
.empty { color: var(--dim); padding: 12px 6px; }
#timeline-wrap { position: relative; }
#timeline { width: 100%; display: block; }
#tip { position: absolute; pointer-events: none; background: #1d2330; color: #fff; padding: 4px 8px; border-radius: 4px; font-size: 12px; white-space: pre; z-index: 2; }
.legend { color: var(--dim); font-size: 12px; }
#members { width: 100%; border-collapse: collapse; }
#members td, #members th { text-align: left; padding: 3px 4px; border-bottom: 1px solid #f0f1f4; }
#members .num { text-align: right; font-variant-numeric: tabular-nums; }
.share { position: relative; height: 8px; background: #edf0f4; border-radius: 4px; min-width: 60px; }
.share > i { position: absolute; top: 0; bottom: 0; left: 0; background: #4c6ef5; border-radius: 4px; }
.share > .mark { position: absolute; top: -2px; bottom: -2px; width: 2px; background: #1d2330; }
.below { color: #b5541c; font-size: 11px; }
#events { list-style: none; margin: 0; padding: 0; max-height: 320px; overflow-y: auto; font-size: 12px; }
#events li { padding: 2px 0; border-bottom: 1px solid #f4f5f7; }
#events .k { font-weight: 600; display: inline-block; min-width: 62px; }
.k-acquired { color: var(--held); } .k-handoff { color: #4c6ef5; } .k-released { color: var(--dim); }
.k-expired { color: var(--expired); } .k-renewed { color: var(--risk); } .k-removed { color: var(--dim); }
h2.second { margin-top: 12px; }
#status { color: var(--dim); font-size: 12px; min-height: 1.4em; }
`;
