// `#/logs?q=failed&service=llm-router`: log search (`GET api/v1/logs/search`, docs/logs.md),
// newest first, with the count over time (`GET api/v1/logs/histogram`, group_by=severity) as
// stacked SVG bars; clicking a bar narrows the time range to its bucket. A line with a trace
// id links to `#/trace/<id>?span=<span id>`. Every filter lives in the URL; "More" appends the
// next page (the answer's `next_cursor`).

import { apiData, apiGet, isAbort } from '../api.js';
import { h, loadingBox, errorBox, emptyBox, setChildren } from '../dom.js';
import { link, navigate, globalParams, timeRange, updateParams } from '../route.js';
import { formatTime, formatIsoUtc, formatValue, nanosToMillis } from '../format.js';
import { createChart, attachHover, svg, niceStep, formatStep } from '../chart.js';
import { severityClass } from './log-lines.js';
import { splitAttrs } from './traces.js';

const PAGE = 100;
const MAX_LIMIT = 5000;
const BUCKETS = 100;

/** Bar colours per severity group of the histogram. */
export const SEVERITY_COLORS = {
  fatal: '#7f1d1d', error: '#dc2626', warn: '#f59e0b', info: '#3b82f6', debug: '#94a3b8',
  trace: '#cbd5e1', unknown: '#d1d5db',
};
const SEVERITY_ORDER = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'unknown'];

const FIELDS = [
  { key: 'q', label: 'Text', placeholder: 'failed, "exact phrase", a OR b, -excluded', wide: true },
  { key: 'service', label: 'Service', values: true },
  { key: 'min_severity', label: 'Min severity', options: [['', 'any'], ['debug', 'debug'], ['info', 'info'], ['warn', 'warn'], ['error', 'error'], ['fatal', 'fatal']] },
  { key: 'filter', label: 'Attributes', placeholder: 'key=value; key=~regex', multi: true, wide: true },
  { key: 'trace_id', label: 'Trace id', placeholder: '32 hex digits' },
];

/** The search parameters (shared by search and histogram) for the URL's parameters. */
export function logParams(params, range) {
  const q = { start: range.start, end: range.end };
  const text = (params.get('q') || '').trim();
  if (text) q.query = text;
  for (const k of ['service', 'min_severity', 'trace_id', 'severity']) {
    const v = (params.get(k) || '').trim();
    if (v) q[k] = v;
  }
  const filters = params.getAll('filter').flatMap(splitAttrs);
  if (filters.length) q.filter = filters;
  return q;
}

function groupColor(g) {
  return SEVERITY_COLORS[String(g).toLowerCase()] || SEVERITY_COLORS.unknown;
}

/** The log lines as `<tr data-testid="log-row">` elements, newest first. */
export function logRows(lines) {
  return lines.map((l) => {
    const sev = severityClass(l);
    const body = typeof l.body === 'string' ? l.body : formatValue(l.body);
    const attrs = l.attributes && Object.keys(l.attributes).length
      ? Object.entries(l.attributes).map(([k, v]) => `${k}=${formatValue(v)}`).join(' ') : '';
    const trace = l.trace_id
      ? h('a', {
        href: link(`/trace/${l.trace_id}`, l.span_id ? { span: l.span_id } : {}),
        'data-testid': 'log-trace-link', class: 'mono', title: `trace ${l.trace_id}${l.span_id ? ` span ${l.span_id}` : ''}`,
      }, `${String(l.trace_id).slice(0, 8)}…`) : null;
    return h('tr', { 'data-testid': 'log-row', class: `sev-${sev}`, 'data-trace-id': l.trace_id || '', 'data-time': l.time_unix_nano },
      h('td', { class: 'l-time', title: formatIsoUtc(l.time_unix_nano) }, formatTime(l.time_unix_nano)),
      h('td', { class: 'l-sev' }, h('span', { class: 'sev', 'data-testid': 'log-severity' }, l.severity_text || sev)),
      h('td', { class: 'l-svc' }, l.service_name || ''),
      h('td', { class: 'l-body' }, body, attrs ? h('div', { class: 'l-attrs' }, attrs) : null),
      h('td', { class: 'l-span' }, trace));
  });
}

/** Mounts the view into `root`; answers `{update, unmount}`. */
export function mount(root, route) {
  let controller = null;
  let lastKey = null;
  let valuesLoaded = null;

  const form = h('form', { class: 'filters card', 'data-testid': 'log-search-form' });
  const inputs = {};
  for (const f of FIELDS) {
    const id = `log-${f.key}`;
    const input = f.options
      ? h('select', { id, name: f.key, 'data-testid': id }, f.options.map(([v, l]) => h('option', { value: v }, l)))
      : h('input', {
        id, name: f.key, 'data-testid': id, placeholder: f.placeholder || '', autocomplete: 'off',
        spellcheck: 'false', list: f.values ? `log-values-${f.key}` : null,
      });
    inputs[f.key] = input;
    form.append(h('div', { class: `field${f.wide ? ' wide' : ''}` }, h('label', { for: id }, f.label), input,
      f.values ? h('datalist', { id: `log-values-${f.key}` }) : null));
  }
  form.append(h('div', { class: 'field actions' },
    h('button', { type: 'submit', class: 'primary', 'data-testid': 'log-submit' }, 'Search'),
    h('button', { type: 'button', 'data-testid': 'log-reset', onclick: () => navigate('/logs', globalParams(route.params)) }, 'Reset')));
  function formParams(p = new URLSearchParams()) {
    for (const f of FIELDS) {
      const v = inputs[f.key].value.trim();
      if (!v) continue;
      if (f.multi) for (const a of splitAttrs(v)) p.append(f.key, a);
      else p.set(f.key, v);
    }
    return p;
  }
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const p = formParams(globalParams(route.params));
    navigate('/logs', p);
    if (lastKey === keyOf(p)) run(true);
  });

  const histStatus = h('div', { class: 'status-slot', 'data-testid': 'log-histogram-status' });
  const histWrap = h('div', { class: 'chart-wrap' });
  const histLegend = h('div', { class: 'series-legend', 'data-testid': 'log-histogram-legend' });
  const histCard = h('div', { class: 'card chart-card' }, histStatus, histWrap, histLegend);
  const summary = h('div', { class: 'summary', 'data-testid': 'log-summary', 'aria-live': 'polite' });
  const status = h('div', { class: 'status-slot' });
  const tbody = h('tbody');
  const table = h('table', { class: 'log-lines log-results', 'data-testid': 'log-results', hidden: true },
    h('thead', {}, h('tr', {}, h('th', {}, 'Time'), h('th', {}, 'Severity'), h('th', {}, 'Service'),
      h('th', {}, 'Body'), h('th', {}, 'Trace'))), tbody);
  const more = h('button', { type: 'button', class: 'more', 'data-testid': 'log-more', hidden: true }, 'More');
  /** The search shown: its query, the next page's cursor, lines shown and matched, the range. */
  let page = null;
  more.addEventListener('click', () => loadMore());
  root.append(h('section', { class: 'view logs-view' }, h('h1', {}, 'Logs'), form, histCard, status, summary,
    h('div', { class: 'card table-card' }, table), more));

  function keyOf(params) {
    const p = new URLSearchParams(params);
    p.sort();
    return p.toString();
  }
  function limitOf(params) {
    const n = Number(params.get('limit'));
    return Number.isInteger(n) && n > 0 ? Math.min(n, MAX_LIMIT) : PAGE;
  }

  function renderHistogram(data, range) {
    const buckets = (data.buckets || []).map((b) => nanosToMillis(b));
    const stepMs = Number(data.step_ns) / 1e6;
    const series = (data.series || []).slice().sort((a, b) =>
      SEVERITY_ORDER.indexOf(String(a.group).toLowerCase()) - SEVERITY_ORDER.indexOf(String(b.group).toLowerCase()));
    const totals = buckets.map((_, i) => series.reduce((acc, s) => acc + (Number(s.counts[i]) || 0), 0));
    const chart = createChart({
      width: histWrap.clientWidth || 900, height: 150, startMs: range.start * 1000, endMs: range.end * 1000,
      yMin: 0, yMax: Math.max(1, ...totals), testid: 'log-histogram', label: 'log lines over time', yTicks: 3,
    });
    buckets.forEach((b, i) => {
      if (!totals[i]) return;
      let acc = 0;
      const x0 = chart.x(b);
      const w = Math.max(1, chart.x(b + stepMs) - x0 - 1);
      for (const s of series) {
        const c = Number(s.counts[i]) || 0;
        if (!c) continue;
        chart.plot.append(svg('rect', {
          class: 'bar', x: x0, y: chart.y(acc + c), width: w, height: Math.max(0.5, chart.y(acc) - chart.y(acc + c)),
          fill: groupColor(s.group), 'data-testid': 'log-bar', 'data-group': s.group, 'data-count': c,
          onclick: () => updateParams({ since: null, start: Math.floor(b / 1000), end: Math.ceil((b + stepMs) / 1000) }),
        }));
        acc += c;
      }
    });
    setChildren(histWrap, chart.svg);
    attachHover(histWrap, chart, (ms) => {
      const i = Math.floor((ms - buckets[0]) / stepMs);
      if (i < 0 || i >= buckets.length) return null;
      return {
        ms: buckets[i] + stepMs / 2,
        title: `${new Date(buckets[i]).toLocaleTimeString()} +${formatStep(stepMs / 1000)}: ${totals[i]} line${totals[i] === 1 ? '' : 's'} (click to zoom)`,
        rows: series.map((s) => ({ label: s.group, value: String(Number(s.counts[i]) || 0), color: groupColor(s.group) })),
      };
    });
    setChildren(histLegend, series.map((s) => h('span', { class: 'legend-item' },
      h('i', { class: 'swatch', style: `background:${groupColor(s.group)};height:10px` }), `${s.group} ${s.total}`)));
  }

  async function loadHistogram(q, range, signal) {
    setChildren(histStatus, loadingBox('Counting lines over time…'));
    const stepS = niceStep(range.end - range.start, BUCKETS, 1);
    try {
      const data = await apiData('api/v1/logs/histogram', { ...q, step: formatStep(stepS), group_by: 'severity' }, { signal });
      if (signal.aborted) return;
      setChildren(histStatus);
      renderHistogram(data || {}, range);
    } catch (e) {
      if (isAbort(e)) return;
      setChildren(histWrap);
      setChildren(histLegend);
      setChildren(histStatus, errorBox('Counting log lines failed', e, null, 'log-histogram-error'));
    }
  }

  async function run(force) {
    const params = route.params;
    const key = keyOf(params);
    if (!force && key === lastKey) return;
    lastKey = key;
    for (const f of FIELDS) {
      inputs[f.key].value = f.multi ? params.getAll(f.key).join('; ') : (params.get(f.key) || '');
    }
    const range = timeRange(params);
    if (valuesLoaded !== params.get('tenant')) {
      valuesLoaded = params.get('tenant');
      apiGet('api/v1/quality/values', { field: 'service' }, { quiet401: true }).then((b) => {
        const list = form.querySelector('#log-values-service');
        if (list) setChildren(list, (b && Array.isArray(b.values) ? b.values : []).map((v) => h('option', { value: v })));
      }).catch(() => {}); // suggestions only
    }
    if (controller) controller.abort();
    controller = new AbortController();
    const { signal } = controller;
    const q = logParams(params, range);
    loadHistogram(q, range, signal);
    setChildren(status, loadingBox(`Searching logs (${range.label.toLowerCase()})…`));
    more.disabled = true;
    try {
      const limit = limitOf(params);
      const data = await apiData('api/v1/logs/search', { ...q, limit }, { signal });
      if (signal.aborted) return;
      const lines = Array.isArray(data && data.lines) ? data.lines : [];
      const matched = data && Number.isFinite(data.matched) ? data.matched : lines.length;
      setChildren(tbody, logRows(lines));
      table.hidden = !lines.length;
      page = { q, matched, shown: 0, label: range.label.toLowerCase() };
      showPage(data, lines.length);
      setChildren(status, lines.length ? null
        : emptyBox(`No log lines match these filters (${range.label.toLowerCase()}).`, 'log-empty'));
    } catch (e) {
      if (isAbort(e)) return;
      lastKey = null;
      tbody.replaceChildren();
      table.hidden = true;
      summary.textContent = '';
      more.hidden = true;
      setChildren(status, errorBox('Searching logs failed', e, () => run(true)));
    }
  }

  /** Updates the summary and the "More" button after a page of `added` lines. */
  function showPage(data, added) {
    page.shown += added;
    page.cursor = data && typeof data.next_cursor === 'string' ? data.next_cursor : null;
    const left = Math.max(0, page.matched - page.shown);
    summary.textContent = page.shown
      ? `Showing ${page.shown} of ${page.matched} matching line${page.matched === 1 ? '' : 's'}, newest first · ${page.label}` : '';
    more.hidden = !page.cursor;
    more.disabled = false;
    more.textContent = `More (${Math.min(PAGE, left)} of ${left} left)`;
  }

  /** Appends the next page of the search shown (the answer's `next_cursor`). */
  async function loadMore() {
    if (!page || !page.cursor) return;
    const signal = controller ? controller.signal : undefined;
    more.disabled = true;
    more.textContent = 'Loading…';
    try {
      const data = await apiData('api/v1/logs/search', { ...page.q, limit: PAGE, cursor: page.cursor }, { signal });
      if (signal && signal.aborted) return;
      const lines = Array.isArray(data && data.lines) ? data.lines : [];
      tbody.append(...logRows(lines));
      showPage(data, lines.length);
    } catch (e) {
      if (isAbort(e)) return;
      more.disabled = false;
      more.textContent = 'More';
      setChildren(status, errorBox('Loading more lines failed', e, () => loadMore()));
    }
  }

  run(false);
  return {
    update(r) {
      route = r;
      run(false);
      return true;
    },
    pendingParams: () => formParams(),
    unmount() {
      if (controller) controller.abort();
    },
  };
}
