// One detector's series against its band (docs/detectors.md, "Written series"): the actual
// series from the detector's own query (or each role's, in service mode) and the
// `<name>:predicted`, `:lower`, `:upper` series it writes back, all through the Prometheus API
// (`GET api/v1/query_range`, step = the detector's step), one chart per series with its
// anomaly events shaded; an event links to the traces of its time range.

import { apiData } from '../api.js';
import { h, setChildren, emptyBox } from '../dom.js';
import { link } from '../route.js';
import { formatNumber } from '../format.js';
import {
  createChart, linePath, bandPath, extent, attachHover, svg, parseDuration,
} from '../chart.js';

/** The Prometheus API's most points per series. */
const MAX_POINTS = 11000;
/** Charts drawn at most (one per series). */
export const MAX_CHARTS = 12;

/** A series' labels without `__name__` as a stable key (sorted JSON). */
export function labelKey(labels) {
  const entries = Object.entries(labels || {}).filter(([k]) => k !== '__name__');
  entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return JSON.stringify(entries);
}

/** `{a="1", b="2"}` (without `__name__`), or `{}`. */
export function labelText(labels) {
  const entries = Object.entries(labels || {}).filter(([k]) => k !== '__name__');
  entries.sort((a, b) => (a[0] < b[0] ? -1 : 1));
  return `{${entries.map(([k, v]) => `${k}=${JSON.stringify(String(v))}`).join(', ')}}`;
}

/** The traces view's filters for an event: its time range, and its model when it names one. */
export function eventTraceParams(ev, nowMs = Date.now()) {
  const p = {
    since: null,
    start: Math.floor(Number(ev.start_ms) / 1000),
    end: Math.ceil(Number(ev.end_ms ?? nowMs) / 1000),
  };
  const l = ev.labels || {};
  const model = l.model || l.gen_ai_request_model || l['gen_ai.request.model'];
  if (model) p.model = model;
  const service = l.service_name || l.service;
  if (service) p.service = service;
  return p;
}

/** The step (seconds) for `det` over `range`: its own, times the least factor within limits. */
export function detectorStep(det, range) {
  const own = parseDuration(det.step) || 60;
  const factor = Math.max(1, Math.ceil((range.end - range.start) / own / MAX_POINTS));
  return own * factor;
}

async function matrix(query, q, signal) {
  const data = await apiData('api/v1/query_range', { query, ...q }, { signal });
  return data && Array.isArray(data.result) ? data.result : [];
}

/** Fetches the detector's actual, predicted, lower and upper series, grouped per label key. */
export async function loadSeries(det, range, signal) {
  const step = detectorStep(det, range);
  const q = {
    start: Math.ceil(range.start / step) * step, end: Math.floor(range.end / step) * step, step,
  };
  const actualQueries = det.mode === 'service' && det.roles
    ? Object.entries(det.roles).map(([role, r]) => ({ query: r && r.query, role }))
    : [{ query: det.query, role: null }];
  const [predicted, lower, upper, ...actuals] = await Promise.all([
    matrix(`${det.name}:predicted`, q, signal),
    matrix(`${det.name}:lower`, q, signal),
    matrix(`${det.name}:upper`, q, signal),
    ...actualQueries.filter((a) => a.query).map((a) => matrix(a.query, q, signal).then((res) =>
      res.map((r) => (a.role ? { ...r, metric: { ...r.metric, role: a.role } } : r)))),
  ]);
  const groups = new Map();
  const put = (kind, r) => {
    const key = labelKey(r.metric);
    if (!groups.has(key)) groups.set(key, { key, labels: r.metric || {}, actual: new Map(), predicted: new Map(), lower: new Map(), upper: new Map() });
    const g = groups.get(key);
    for (const [t, v] of r.values || []) g[kind].set(Math.round(Number(t) * 1000), Number(v));
  };
  for (const r of actuals.flat()) put('actual', r);
  for (const r of predicted) put('predicted', r);
  for (const r of lower) put('lower', r);
  for (const r of upper) put('upper', r);
  return { step, startMs: q.start * 1000, endMs: q.end * 1000, groups: [...groups.values()] };
}

function pointsOf(map, times) {
  return times.map((t) => [t, map.has(t) ? map.get(t) : null]);
}

/** One series' chart (`data-testid="detector-chart"`): band, predicted, actual, events. */
function seriesChart(g, events, o) {
  const wrap = h('div', { class: 'chart-wrap' });
  const times = [];
  for (let t = o.startMs; t <= o.endMs; t += o.step * 1000) times.push(t);
  const ext = extent(g.actual.values(), g.lower.values(), g.upper.values());
  const chart = createChart({
    width: o.width, height: 220, startMs: o.startMs, endMs: o.endMs,
    yMin: ext ? ext[0] : 0, yMax: ext ? ext[1] : 1, testid: 'detector-chart',
    label: `${o.name} ${labelText(g.labels)}`,
  });
  for (const ev of events) {
    const x0 = chart.x(Math.max(Number(ev.start_ms), o.startMs));
    const x1 = chart.x(Math.min(ev.end_ms === null || ev.end_ms === undefined ? o.endMs : Number(ev.end_ms), o.endMs));
    if (x1 < chart.margin.left || x0 > chart.margin.left + chart.pw) continue;
    const rect = svg('rect', {
      class: `event level-${ev.level || 'high'}`, x: x0, y: chart.margin.top, width: Math.max(2, x1 - x0),
      height: chart.ph, 'data-testid': 'anomaly-event', 'data-event-id': ev.id,
    }, svg('title', { text: `${ev.level || ''} anomaly (severity ${formatNumber(ev.severity, 2)}): ${ev.explanation || ''}\nClick for the traces of this time range.` }));
    chart.plot.append(svg('a', { href: link('/traces', eventTraceParams(ev)) }, rect));
  }
  const band = bandPath(times, g.lower, g.upper, chart.x, chart.y);
  chart.plot.append(svg('path', { class: 'band', d: band || 'M0,0', 'data-testid': 'band' }));
  const pred = linePath(pointsOf(g.predicted, times), chart.x, chart.y);
  chart.plot.append(svg('path', { class: 'predicted', d: pred.d || 'M0,0', 'data-testid': 'predicted' }));
  const act = linePath(pointsOf(g.actual, times), chart.x, chart.y);
  chart.plot.append(svg('path', {
    class: 'actual', d: act.d || 'M0,0', 'data-testid': 'actual', 'data-points': g.actual.size,
  }));
  for (const [px, py] of act.dots) chart.plot.append(svg('circle', { cx: px, cy: py, r: 2, fill: '#111827' }));
  wrap.append(chart.svg);
  attachHover(wrap, chart, (ms) => {
    const t = o.startMs + Math.round((ms - o.startMs) / (o.step * 1000)) * o.step * 1000;
    const f = (m) => (m.has(t) ? formatNumber(m.get(t), 4) : '-');
    return {
      ms: t, title: new Date(t).toLocaleString(),
      rows: [
        { label: 'actual', value: f(g.actual), color: '#111827' },
        { label: 'predicted', value: f(g.predicted), color: '#2563eb' },
        { label: 'band', value: `${f(g.lower)} … ${f(g.upper)}`, color: '#93c5fd' },
      ],
    };
  });
  return h('div', { class: 'detector-series', 'data-testid': 'detector-series', 'data-labels': labelText(g.labels) },
    h('div', { class: 'series-title mono' }, labelText(g.labels),
      g.actual.size ? null : h('span', { class: 'muted' }, ' (the query returns no points for this series in the range)')),
    wrap);
}

/** Legend of the charts' marks. */
function chartLegend() {
  return h('div', { class: 'series-legend', 'data-testid': 'detector-legend' },
    h('span', { class: 'legend-item' }, h('i', { class: 'swatch actual' }), 'actual (the detector\'s query)'),
    h('span', { class: 'legend-item' }, h('i', { class: 'swatch predicted' }), 'predicted'),
    h('span', { class: 'legend-item' }, h('i', { class: 'swatch band' }), 'band (lower … upper)'),
    h('span', { class: 'legend-item' }, h('i', { class: 'swatch event' }), 'anomaly event (click: its traces)'));
}

/**
 * Draws the charts of `det` into `el` from `data` (`loadSeries`), with `events` shaded on the
 * chart of their series (events whose labels match none, as in service mode, on every chart).
 */
export function renderDetectorCharts(el, det, data, events, range) {
  const groups = data.groups;
  if (!groups.length) {
    setChildren(el, emptyBox(`Neither the query of ${det.name} nor its band series (${det.name}:lower, :upper) ` +
      `have points in this range (${range.label.toLowerCase()}): the detector writes its band from its first run on.`, 'detector-chart-empty'));
    return;
  }
  groups.sort((a, b) => (b.actual.size - a.actual.size) || (a.key < b.key ? -1 : 1));
  const keys = new Set(groups.map((g) => g.key));
  const width = el.clientWidth || 900;
  const shown = groups.slice(0, MAX_CHARTS);
  setChildren(el, chartLegend(),
    groups.length > MAX_CHARTS ? h('div', { class: 'muted' }, `${groups.length} series; the first ${MAX_CHARTS} are drawn.`) : null,
    shown.map((g) => seriesChart(g, events.filter((ev) => labelKey(ev.labels) === g.key || !keys.has(labelKey(ev.labels))),
      { width, startMs: data.startMs, endMs: data.endMs, step: data.step, name: det.name })));
}
