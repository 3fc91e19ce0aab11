// The trace waterfall: span tree layout (pure, no DOM) and the rows' HTML, built as one string
// so a 10,000-span trace is a single innerHTML assignment with no per-row layout reads.

import { escapeHtml, formatDuration } from '../format.js';

/** The deepest level indented further (style.css caps the indentation at the same depth). */
const MAX_INDENT_DEPTH = 40;

function num(v) {
  const n = Number(v);
  return Number.isFinite(n) ? n : 0;
}

function spanEnd(s) {
  if (s.end_unix_nano !== undefined && s.end_unix_nano !== null) return num(s.end_unix_nano);
  return num(s.start_unix_nano) + num(s.duration_nano);
}

/**
 * Lays out a trace's spans: depth-first, children ordered by start under their parent; spans
 * whose parent is absent (or that sit on a parent cycle) are roots, ordered by start.
 * Answers `{rows, traceStart, traceEnd, critical, hues}`: each row is
 * `{span, depth, parentRow, children, subtree, critical}` (`subtree`: rows in its subtree,
 * itself included, so row i's descendants are rows i+1 .. i+subtree-1), `critical` maps a span
 * id to its critical-path segments (`[[start, end], ...]`, unix ns) and `hues` a service name
 * to its colour hue.
 */
export function layoutTrace(spans, criticalPath) {
  const list = Array.isArray(spans) ? spans : [];
  const byId = new Map();
  for (const s of list) if (s && s.span_id && !byId.has(s.span_id)) byId.set(s.span_id, s);
  const kids = new Map();
  const roots = [];
  for (const s of list) {
    if (!s) continue;
    const p = s.parent_span_id;
    if (p && p !== s.span_id && byId.has(p)) {
      let arr = kids.get(p);
      if (!arr) kids.set(p, (arr = []));
      arr.push(s);
    } else {
      roots.push(s);
    }
  }
  const byStart = (a, b) => num(a.start_unix_nano) - num(b.start_unix_nano) ||
    spanEnd(b) - spanEnd(a) || String(a.name).localeCompare(String(b.name));
  roots.sort(byStart);
  for (const arr of kids.values()) arr.sort(byStart);

  const critical = new Map();
  for (const seg of Array.isArray(criticalPath) ? criticalPath : []) {
    if (!seg || !seg.span_id) continue;
    let arr = critical.get(seg.span_id);
    if (!arr) critical.set(seg.span_id, (arr = []));
    arr.push([num(seg.start_unix_nano), num(seg.end_unix_nano)]);
  }

  const rows = [];
  const seen = new Set();
  const visit = (root) => {
    // Iterative depth-first walk (a 10,000-deep chain must not overflow the stack).
    const stack = [[root, 0, -1]];
    while (stack.length) {
      const [span, depth, parentRow] = stack.pop();
      if (seen.has(span)) continue;
      seen.add(span);
      const children = kids.get(span.span_id) || [];
      rows.push({
        span, depth, parentRow, children: 0, subtree: 1,
        critical: critical.has(span.span_id),
      });
      const me = rows.length - 1;
      for (let i = children.length - 1; i >= 0; i--) stack.push([children[i], depth + 1, me]);
    }
  };
  for (const r of roots) visit(r);
  // Spans on a parent cycle were reached from no root: show them as roots too.
  if (seen.size < list.length) {
    for (const s of list.filter((x) => x && !seen.has(x)).sort(byStart)) visit(s);
  }
  // Children counts and subtree sizes, bottom-up (a row's parent comes before it).
  for (let i = rows.length - 1; i >= 0; i--) {
    const p = rows[i].parentRow;
    if (p >= 0) {
      rows[p].children += 1;
      rows[p].subtree += rows[i].subtree;
    }
  }

  // Service colours: hues by first appearance, a golden angle apart, so the services of one
  // trace stay distinguishable.
  const hues = new Map();
  for (const r of rows) {
    const svc = r.span.service_name || '';
    if (!hues.has(svc)) hues.set(svc, Math.round((200 + hues.size * 137.508) % 360));
  }

  let traceStart = Infinity;
  let traceEnd = -Infinity;
  for (const s of list) {
    if (!s) continue;
    traceStart = Math.min(traceStart, num(s.start_unix_nano));
    traceEnd = Math.max(traceEnd, spanEnd(s));
  }
  if (!Number.isFinite(traceStart)) {
    traceStart = 0;
    traceEnd = 0;
  }
  return { rows, traceStart, traceEnd, critical, hues };
}

function pct(x) {
  return `${(Math.round(x * 1e6) / 1e4)}%`;
}

function isError(span) {
  const st = span.status;
  return st === 'error' || (st && st.code === 'error');
}

/**
 * The rows' HTML (one string). Rows under a collapsed span (a Set of span ids) are left out.
 * Each row: `data-testid="span-row" data-span-id data-depth data-critical`, a name cell
 * indented by depth, the duration, and a track whose bar (a pseudo-element placed by the
 * row's `--l`/`--w` custom properties) shows the span and whose `.cp` marks show its
 * critical-path segments. Few elements per row: 10,000 rows stay cheap to parse and style.
 */
export function rowsHtml(layout, collapsed = new Set(), selectedId = null) {
  const { rows, traceStart, traceEnd, critical, hues } = layout;
  const total = Math.max(traceEnd - traceStart, 1);
  const out = [];
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    const s = row.span;
    const start = num(s.start_unix_nano);
    const dur = s.duration_nano !== undefined && s.duration_nano !== null
      ? num(s.duration_nano) : spanEnd(s) - start;
    const left = Math.min(Math.max((start - traceStart) / total, 0), 1);
    const width = Math.min(Math.max(dur / total, 0), 1 - left);
    const err = isError(s);
    const isCollapsed = row.children > 0 && collapsed.has(s.span_id);
    const hue = hues.get(s.service_name || '') ?? 210;
    out.push(
      '<div class="span-row', row.critical ? ' critical' : '', err ? ' err' : '',
      s.span_id === selectedId ? ' selected' : '',
      '" data-testid="span-row" data-span-id="', escapeHtml(s.span_id),
      '" data-depth="', row.depth, '" data-critical="', row.critical,
      '" style="--d:', row.depth, ';--h:', hue, ';--l:', pct(left), ';--w:', pct(width),
      '"><span class="sr-name">',
      row.children
        ? (isCollapsed ? '<button class="caret" data-action="toggle" aria-label="expand">▸</button>'
          : '<button class="caret" data-action="toggle" aria-label="collapse">▾</button>')
        : '',
      '<b>', escapeHtml(s.service_name || ''), '</b> ', escapeHtml(s.name || ''),
      row.depth > MAX_INDENT_DEPTH ? ` <em>depth ${row.depth}</em>` : '',
      isCollapsed ? ` <em>+${row.subtree - 1}</em>` : '',
      err ? ' <em class="badge err">error</em>' : '',
      '</span><span class="sr-dur">', escapeHtml(formatDuration(dur)),
      '</span><span class="sr-track">');
    const segs = critical.get(s.span_id);
    if (segs) {
      for (const [a, b] of segs) {
        const l = Math.min(Math.max((a - traceStart) / total, 0), 1);
        const w = Math.min(Math.max((b - a) / total, 0), 1 - l);
        out.push('<i class="cp" style="left:', pct(l), ';width:', pct(w), '"></i>');
      }
    }
    out.push('</span></div>');
    if (isCollapsed) i += row.subtree - 1;
  }
  return out.join('');
}

/** The time axis above the track: ticks at 0, 25, 50, 75 and 100 % of the trace. */
export function axisHtml(layout) {
  const total = Math.max(layout.traceEnd - layout.traceStart, 0);
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) =>
    `<span class="tick" style="left:${pct(f)}">${escapeHtml(formatDuration(total * f))}</span>`);
  return `<span class="sr-name">Service · span</span><span class="sr-dur">Duration</span>` +
    `<span class="sr-track axis">${ticks.join('')}</span>`;
}

/** The legend: bar colours, the critical path mark, errors. */
export function legendHtml() {
  return '<span class="lg"><i class="lg-bar"></i>span (colour = service)</span>' +
    '<span class="lg"><i class="lg-cp"></i>critical path: the segments the trace\'s end-to-end latency is made of (row marked at the left, segments underlined)</span>' +
    '<span class="lg"><i class="lg-err"></i>status error</span>';
}
