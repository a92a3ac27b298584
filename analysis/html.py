"""The report as one self-contained HTML page: CSS, script and figures inline.

Nothing is fetched: no web fonts (the system's sans-serif), no CDN script,
figures as data: URIs, so the file can be mailed, archived or opened on an
air-gapped login node, and a browser test can fail on any network request.
Tables sort by a click on their header (a few lines of script below, keyed on
the leading number of a cell, so one unit per column matters). Figures are
shown at their physical size (inches × 96 px) so 10 pt text reads as 10 pt.
"""

from __future__ import annotations

import base64
import html
import re

from analysis.blocks import Block, Figure, Table, capped

CSS = """
:root{--fg:#1d1d1f;--muted:#5b5b66;--line:#d6d6de;--head:#f1f2f6;--accent:#2457a6}
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
 color:var(--fg);max-width:1400px;margin:0 auto;padding:16px 28px 48px;line-height:1.45;
 font-size:15px}
h1{font-size:26px;margin:8px 0 4px}h2{font-size:21px;margin:36px 0 8px;padding-top:8px;
 border-top:2px solid var(--line)}h3{font-size:16px;margin:20px 0 6px}
a{color:var(--accent)}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:8px 0 12px;
 color:var(--muted);font-size:14px}dl.meta dt{font-weight:600}dl.meta dd{margin:0;
 overflow-wrap:anywhere}
nav.toc{font-size:14px;margin:8px 0 0}nav.toc a{margin-right:14px;white-space:nowrap}
ul.findings{padding-left:22px}ul.findings li{margin:4px 0}
.tablewrap{overflow-x:auto;max-width:100%;margin:4px 0}
table{border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:4px 0;font-size:14px}
th,td{border:1px solid var(--line);padding:3px 8px;vertical-align:top}
th{background:var(--head);text-align:left;cursor:pointer;user-select:none;
 white-space:nowrap;position:sticky;top:0}
th[aria-sort=ascending]::after{content:" ▲"}th[aria-sort=descending]::after{content:" ▼"}
td.num{text-align:right;white-space:nowrap}
tbody tr:nth-child(even){background:#fafafc}
p.note,p.left{color:var(--muted);font-size:13px;margin:2px 0 14px;max-width:1100px}
figure{margin:12px 0 20px}figure img{max-width:100%;height:auto;display:block}
figcaption{color:var(--muted);font-size:14px;max-width:1100px;margin-top:4px}
"""

SCRIPT = """
(function () {
  "use strict";
  var scale = {K: 1024, M: 1048576};
  function key(cell) {
    var text = cell.textContent.trim();
    if (text === "") { return null; }
    if (/^\\d{4}-\\d\\d-\\d\\d/.test(text)) { return text; }
    var m = text.match(/^([-+\\u2212]?\\d*\\.?\\d+(?:e[-+]?\\d+)?)([KM])?(?![A-Za-z_])/i);
    if (!m) { return text.toLowerCase(); }
    var v = parseFloat(m[1].replace("\\u2212", "-"));
    return m[2] ? v * scale[m[2].toUpperCase()] : v;
  }
  function compare(a, b) {
    if (a === null || b === null) { return a === b ? 0 : (a === null ? 1 : -1); }
    if (typeof a === typeof b) { return a < b ? -1 : (a > b ? 1 : 0); }
    return typeof a === "number" ? -1 : 1;
  }
  function sortBy(table, col, th) {
    var body = table.tBodies[0];
    var up = th.getAttribute("aria-sort") !== "ascending";
    var rows = Array.prototype.slice.call(body.rows);
    var keyed = rows.map(function (row, i) { return [key(row.cells[col]), i, row]; });
    keyed.sort(function (x, y) {
      var c = compare(x[0], y[0]);
      if (x[0] !== null && y[0] !== null && !up) { c = -c; }
      return c || x[1] - y[1];
    });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
      h.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", up ? "ascending" : "descending");
    keyed.forEach(function (k) { body.appendChild(k[2]); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.tabIndex = 0;
      th.title = "Sort by this column";
      th.addEventListener("click", function () { sortBy(table, col, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, col, th); }
      });
    });
  });
})();
"""

_NUMERIC = re.compile(r"^[-+−]?\d")
_DATE = re.compile(r"^\d{4}-\d\d-\d\d")


def _esc(text: object) -> str:
    return html.escape(str(text))


def _table(table: Table) -> str:
    frame, left = capped(table)
    if frame.empty:
        return f"<p>{_esc(table.caption)}: none.</p>"
    head = "".join(f'<th scope="col">{_esc(c)}</th>' for c in frame.columns)
    rows = []
    for row in frame.itertuples(index=False):
        cells = []
        for value in row:
            text = "" if value is None else str(value)
            cls = ' class="num"' if _NUMERIC.match(text) and not _DATE.match(text) else ""
            cells.append(f"<td{cls}>{_esc(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    parts = [f'<div class="tablewrap"><table class="sortable"><caption>{_esc(table.caption)}'
             f"</caption><thead><tr>{head}</tr></thead><tbody>", "\n".join(rows),
             "</tbody></table></div>"]
    if table.note:
        parts.append(f'<p class="note">{_esc(table.note)}</p>')
    if left:
        parts.append(f'<p class="left">{_esc(left)}</p>')
    return "".join(parts)


def _figure(fig: Figure) -> str:
    data = base64.b64encode(fig.path.read_bytes()).decode("ascii")
    size = (f' width="{round(fig.width_in * 96)}" height="{round(fig.height_in * 96)}"'
            if fig.width_in and fig.height_in else "")
    note = f" {_esc(fig.note)}." if fig.note else ""
    return (f'<figure><img src="data:image/png;base64,{data}"{size} alt="{_esc(fig.caption)}">'
            f"<figcaption>{_esc(fig.caption)}.{note}</figcaption></figure>")


def to_html(blocks: list[Block], title: str) -> str:
    """One HTML document; h2 blocks with an anchor get a table-of-contents link."""
    toc = [b for b in blocks if b.kind == "h2" and b.anchor]
    body: list[str] = []
    for block in blocks:
        if block.kind == "h1":
            body.append(f"<header><h1>{_esc(block.text)}</h1>")
        elif block.kind == "meta":
            body.append('<dl class="meta">' + "".join(
                f"<dt>{_esc(k)}</dt><dd>{_esc(v)}</dd>" for k, v in block.pairs) + "</dl>")
            body.append('<nav class="toc">' + "".join(
                f'<a href="#{_esc(b.anchor)}">{_esc(b.text)}</a>' for b in toc) + "</nav></header>")
        elif block.kind == "h2":
            anchor = f' id="{_esc(block.anchor)}"' if block.anchor else ""
            body.append(f"<h2{anchor}>{_esc(block.text)}</h2>")
        elif block.kind == "h3":
            body.append(f"<h3>{_esc(block.text)}</h3>")
        elif block.kind == "p":
            body.append(f"<p>{_esc(block.text)}</p>")
        elif block.kind == "list":
            body.append('<ul class="findings">' + "".join(
                f"<li>{_esc(item)}</li>" for item in block.items) + "</ul>")
        elif block.kind == "table" and block.table is not None:
            body.append(_table(block.table))
        elif block.kind == "figure" and block.figure is not None:
            body.append(_figure(block.figure))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<link rel=\"icon\" href=\"data:,\">"
            f"<title>{_esc(title)}</title><style>{CSS}</style></head><body>\n"
            + "\n".join(body) + f"\n<script>{SCRIPT}</script>\n</body></html>\n")
