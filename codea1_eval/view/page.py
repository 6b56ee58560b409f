"""The self-contained HTML page of `codea1-eval view`: inline CSS and JavaScript, the run's data as JSON in
the page; no server, no network, nothing loaded from elsewhere (opens from disk).

The page data (built per command in ``codea1_eval.view``) has ``title``, ``summary`` (metrics, settings,
provenance), ``tasks`` (one row per task: ``id``, ``status``, ``counts`` and ``items`` shown when the row
is opened: samples, tests, matrices, as ``{"kind": ..., ...}`` blocks) and ``charts`` (line charts drawn
as inline SVG). Rows are built once; an opened row renders its items then, so a page of thousands of rows
loads fast, and filtering (status, search) only toggles rows.
"""

from __future__ import annotations

import html
import json
from typing import Any

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
.task{border:1px solid #ddd;margin:2px 0}.task>summary{cursor:pointer;padding:3px 6px}
.pass{color:#1a7f37}.fail{color:#c62828}.mixed{color:#b26a00}
pre{background:#f6f8fa;padding:6px;overflow:auto;max-height:24em;margin:4px 0}mark{background:#fff3b0}
.cell{width:14px;height:14px;padding:0}.cell.on{background:#2e7d32}.cell.off{background:#e57373}
.detail{white-space:pre-wrap;font-family:monospace}.chosen{font-weight:bold}.muted{color:#777}#filters{margin:1em 0}svg{border:1px solid #ddd;margin:4px}
"""

SCRIPT = r"""
const data = JSON.parse(document.getElementById('run-data').textContent);
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) k === 'text' ? node.textContent = v : node.setAttribute(k, v);
  for (const child of children) node.append(child);
  return node;
};
const fmt = v => v === null || v === undefined ? '-' : (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(2)) : String(v));
function keyValueTable(rows, id) {
  const table = el('table', {id});
  for (const [k, v] of rows) table.append(el('tr', {}, el('th', {text: k}), el('td', {text: typeof v === 'object' ? JSON.stringify(v) : fmt(v)})));
  return table;
}
function summary() {
  const s = data.summary, root = document.getElementById('summary');
  const metrics = el('table', {id: 'metrics'}, el('tr', {}, el('th', {text: 'metric'}), el('th', {text: 'value'}), el('th', {text: '95% interval'})));
  for (const m of s.metrics) metrics.append(el('tr', {'data-metric': m.key}, el('td', {text: m.key}), el('td', {text: fmt(m.value)}),
    el('td', {text: m.interval ? `[${fmt(m.interval[0])}, ${fmt(m.interval[1])}]` : ''})));
  root.append(el('h2', {text: 'Metrics'}), metrics, el('h2', {text: 'Settings'}), keyValueTable(Object.entries(s.settings), 'settings'),
    el('h2', {text: 'Provenance'}), keyValueTable(Object.entries(s.provenance), 'provenance'));
}
function highlighted(text, start, end) {
  const pre = el('pre');
  if (start === null || start === undefined) { pre.textContent = text; return pre; }
  pre.append(text.slice(0, start), el('mark', {text: text.slice(start, end)}), text.slice(end));
  return pre;
}
function matrix(item) {
  const table = el('table', {class: 'matrix'});
  table.append(el('tr', {}, el('th', {text: item.row_title}), ...item.tests.map(t => el('th', {text: t.length > 12 ? t.slice(0, 12) + '\u2026' : t, title: t}))));
  item.rows.forEach((row, i) => {
    const label = `${item.chosen === i ? '\u2605 ' : ''}${row.id} ${row.mark ? '\u2713' : '\u2717'}`;
    const tr = el('tr', {class: item.chosen === i ? 'chosen' : ''}, el('th', {class: row.mark ? 'pass' : 'fail', text: label}));
    row.cells.forEach((on, j) => tr.append(el('td', {class: 'cell ' + (on ? 'on' : 'off'), title: `${row.id} x ${item.tests[j]}: ${on ? item.on : item.off}`})));
    table.append(tr);
  });
  return el('div', {}, el('div', {class: 'muted', text: item.legend}), table);
}
function renderItem(item) {
  if (item.kind === 'sample') {
    const head = el('div', {class: item.passed ? 'pass' : 'fail', text: `#${item.index}: ${item.verdict}`});
    const parts = [head];
    if (item.detail) parts.push(el('div', {class: 'detail', text: item.detail}));
    parts.push(highlighted(item.response, item.code_start, item.code_end));
    return el('div', {class: 'sample'}, ...parts);
  }
  if (item.kind === 'matrix') return matrix(item);
  if (item.kind === 'table') {
    const table = el('table', {}, el('tr', {}, ...item.columns.map(c => el('th', {text: c}))));
    for (const row of item.rows) table.append(el('tr', {}, ...row.map(v => el('td', {text: fmt(v)}))));
    return el('div', {}, el('div', {class: 'muted', text: item.title}), table);
  }
  return el('pre', {text: item.text});
}
function tasks() {
  const root = document.getElementById('tasks');
  root.append(el('h2', {text: `${data.tasks_title} (${data.tasks.length})`}));
  for (const task of data.tasks) {
    const details = el('details', {class: 'task', 'data-status': task.status, 'data-search': (task.id + ' ' + (task.search || '')).toLowerCase()});
    details.append(el('summary', {}, el('span', {class: task.status, text: task.status}), ` ${task.id} `, el('span', {class: 'muted', text: task.counts || ''})));
    details.addEventListener('toggle', () => {
      if (details.open && !details.dataset.rendered) { details.dataset.rendered = '1'; task.items.forEach(i => details.append(renderItem(i))); }
    });
    root.append(details);
  }
}
function applyFilters() {
  const status = document.getElementById('status').value, query = document.getElementById('search').value.toLowerCase();
  let shown = 0;
  for (const row of document.querySelectorAll('#tasks details')) {
    const visible = (status === 'all' || row.dataset.status === status) && (!query || row.dataset.search.includes(query));
    row.style.display = visible ? '' : 'none';
    shown += visible;
  }
  document.getElementById('shown').textContent = `${shown} shown`;
}
const esc = text => String(text).replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`);
function chart(spec) {
  const W = 420, H = 220, P = 40, pts = spec.series.flatMap(s => s.points);
  const xs = pts.map(p => p[0]), ys = pts.map(p => p[1]).filter(v => v !== null);
  const [x0, x1] = [Math.min(...xs), Math.max(...xs) || 1], [y0, y1] = [Math.min(0, ...ys), Math.max(1, ...ys)];
  const sx = x => P + (x - x0) / ((x1 - x0) || 1) * (W - 2 * P), sy = y => H - P - (y - y0) / ((y1 - y0) || 1) * (H - 2 * P);
  const colors = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e'];
  let body = `<text x="${W / 2}" y="14" text-anchor="middle">${esc(spec.title)}</text><text x="${W / 2}" y="${H - 6}" text-anchor="middle">${esc(spec.x)}</text>`;
  body += `<line x1="${P}" y1="${H - P}" x2="${W - P}" y2="${H - P}" stroke="#999"/><line x1="${P}" y1="${P}" x2="${P}" y2="${H - P}" stroke="#999"/>`;
  body += `<text x="4" y="${P - 8}">${fmt(y1)}</text><text x="4" y="${H - P}">${fmt(y0)}</text>`;
  spec.series.forEach((s, i) => {
    const line = s.points.filter(p => p[1] !== null).map(p => `${sx(p[0])},${sy(p[1])}`).join(' ');
    body += `<polyline fill="none" stroke="${colors[i % 5]}" stroke-width="2" points="${line}"/>`;
    body += `<text x="${W - P + 2}" y="${P + 14 * i}" fill="${colors[i % 5]}" font-size="11">${esc(s.label)}</text>`;
  });
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('width', W + 110); svg.setAttribute('height', H); svg.innerHTML = body;
  return svg;
}
function charts() {
  const root = document.getElementById('charts');
  if (!data.charts.length) return;
  root.append(el('h2', {text: 'Charts'}));
  for (const spec of data.charts) root.append(chart(spec));
}
summary(); charts(); tasks();
const statuses = ['all', ...new Set(data.tasks.map(t => t.status))];
const select = document.getElementById('status');
for (const s of statuses) select.append(el('option', {value: s, text: s}));
select.addEventListener('change', applyFilters);
document.getElementById('search').addEventListener('input', applyFilters);
applyFilters();
document.body.dataset.ready = '1';
"""


def render_page(data: dict[str, Any]) -> str:
    """The HTML page for ``data`` (see the module doc)."""
    # Every "<" as \u003c: no run text can end the data block or open a comment or script state in it.
    payload = json.dumps(data, allow_nan=False, default=str).replace("<", "\\u003c")
    title = html.escape(data["title"])
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            f"script-src 'unsafe-inline'; img-src data:\">"
            f"<title>{title}</title><style>{STYLE}</style></head><body>"
            f"<h1>{title}</h1><div id=\"summary\"></div><div id=\"charts\"></div>"
            f"<div id=\"filters\">status <select id=\"status\"></select> search <input id=\"search\" "
            f"placeholder=\"task id or text\"> <span id=\"shown\"></span></div><div id=\"tasks\"></div>"
            f"<script type=\"application/json\" id=\"run-data\">{payload}</script>"
            f"<script>{SCRIPT}</script></body></html>\n")
