// `#/` (also `#/overview`): the landing page. Tiles over the shared time range, each loading on
// its own and linking to its view: spans and log lines per second (`POST api/v1/aggregate`,
// `rate` and `count`), metric names (`GET api/v1/label/__name__/values`), the most recent
// anomaly events (`GET api/v1/anomalies?limit=10`), the detectors and their states
// (`GET api/v1/detectors`), and the hallucination index per model (last value of each group,
// `GET api/v1/quality`).

import { apiGet, apiData, apiPostData, isAbort } from '../api.js';
import { h, loadingBox, errorBox, emptyBox, setChildren } from '../dom.js';
import { link, timeRange } from '../route.js';
import { formatNumber, formatUnixSeconds } from '../format.js';
import { svg, linePath, extent, niceStep, formatStep } from '../chart.js';
import { lastValue, tracesFilter } from './quality.js';
import { eventTraceParams } from './detector-chart.js';

const ANOMALY_LIMIT = 10;

/** A rate as text: `3.64`, `0.468`, `1.2k`. */
export function formatRate(v) {
  const n = Number(v);
  if (!Number.isFinite(n)) return '-';
  if (n >= 1000) return `${Number((n / 1000).toPrecision(3))}k`;
  return String(Number(n.toPrecision(3)));
}

function tile(key, title, href, linkText) {
  const body = h('div', { class: 'tile-body' }, loadingBox('Loading…', `tile-${key}-loading`));
  const el = h('section', { class: `tile card tile-${key}`, 'data-testid': `tile-${key}` },
    h('div', { class: 'tile-head' }, h('h2', {}, title),
      h('a', { href, 'data-testid': `tile-${key}-link` }, linkText)),
    body);
  return { el, body };
}

function bigNumber(key, value, unit, sub) {
  return [h('div', { class: 'big' }, h('span', { 'data-testid': `tile-${key}-value` }, value), h('span', { class: 'unit' }, unit)),
    sub ? h('div', { class: 'muted' }, sub) : null];
}

function sparkline(points) {
  const ext = extent(points.map((p) => p[1]));
  if (!ext || points.length < 2) return null;
  const w = 120;
  const hgt = 22;
  const t0 = points[0][0];
  const t1 = points[points.length - 1][0];
  const span = ext[1] - ext[0] || 1;
  const { d } = linePath(points, (t) => ((t - t0) / (t1 - t0 || 1)) * w, (v) => hgt - 2 - ((v - ext[0]) / span) * (hgt - 4));
  return svg('svg', { class: 'spark', viewBox: `0 0 ${w} ${hgt}`, width: w, height: hgt, 'aria-hidden': 'true' },
    svg('path', { d: d || 'M0,0', class: 'series-line', stroke: '#dc2626' }));
}

/** Mounts the view into `root`; answers `{update, unmount}`. */
export function mount(root, route) {
  let controller = null;
  let lastKey = null;
  const grid = h('div', { class: 'tiles' });
  root.append(h('section', { class: 'view overview-view' }, h('h1', { 'data-testid': 'overview-title' }, 'Overview'), grid));

  async function guarded(t, what, fn, signal) {
    try {
      await fn();
    } catch (e) {
      if (isAbort(e) || signal.aborted) return;
      setChildren(t.body, errorBox(`${what} failed`, e));
    }
  }

  function rateTile(key, signalName, title, unit, noun, href, signal, range) {
    const t = tile(key, title, href, `${noun} →`);
    guarded(t, `Counting ${noun}`, async () => {
      const data = await apiPostData('api/v1/aggregate', {
        signal: signalName, start: range.start, end: range.end, aggregates: [{ func: 'rate' }, { func: 'count' }],
      }, { signal });
      if (signal.aborted) return;
      const row = data && Array.isArray(data.rows) && data.rows[0] ? data.rows[0] : [0, 0];
      setChildren(t.body, bigNumber(key, formatRate(row[0]), `${unit}/s`, `${row[1] ?? 0} ${noun} · ${range.label.toLowerCase()}`));
    }, signal);
    return t.el;
  }

  function metricsTile(signal, range) {
    const t = tile('metrics', 'Metrics', link('/causality'), 'causality →');
    guarded(t, 'Listing metric names', async () => {
      const names = await apiData('api/v1/label/__name__/values', { start: range.start, end: range.end }, { signal });
      if (signal.aborted) return;
      const list = Array.isArray(names) ? names : [];
      const written = list.filter((n) => /:(predicted|lower|upper|anomalous|likelihood)$/.test(n)).length;
      setChildren(t.body, bigNumber('metrics', String(list.length), 'metric names',
        `${written} of them written by detectors · ${range.label.toLowerCase()}`));
    }, signal);
    return t.el;
  }

  function detectorsTile(signal) {
    const t = tile('detectors', 'Anomaly detectors', link('/anomalies'), 'detectors →');
    guarded(t, 'Listing detectors', async () => {
      const data = await apiGet('api/v1/detectors', null, { signal });
      if (signal.aborted) return;
      const detectors = Array.isArray(data && data.detectors) ? data.detectors : [];
      const states = {};
      for (const d of detectors) {
        const s = (d.status && d.status.state) || 'unknown';
        states[s] = (states[s] || 0) + 1;
      }
      setChildren(t.body, bigNumber('detectors', String(detectors.length), `detector${detectors.length === 1 ? '' : 's'}`,
        detectors.length ? Object.entries(states).map(([s, n]) => `${n} ${s}`).join(' · ') : 'none yet: create one in the anomalies view'));
    }, signal);
    return t.el;
  }

  function anomaliesTile(signal) {
    const t = tile('anomalies', 'Recent anomalies', link('/anomalies'), 'all events →');
    guarded(t, 'Loading anomalies', async () => {
      const ev = await apiGet('api/v1/anomalies', { limit: ANOMALY_LIMIT }, { signal });
      if (signal.aborted) return;
      const events = Array.isArray(ev && ev.anomalies) ? ev.anomalies : [];
      setChildren(t.body, events.length
        ? h('ul', { class: 'tile-list', 'data-testid': 'tile-anomalies-list' }, events.map((e) => h('li', { 'data-testid': 'overview-anomaly', 'data-detector': e.detector },
          h('span', { class: `badge level-${e.level || ''}` }, e.level || '?'), ' ',
          h('a', { href: link('/anomalies', { detector: e.detector }) }, e.detector), ' ',
          h('span', { class: 'muted' }, formatUnixSeconds(Number(e.start_ms) / 1000)),
          e.end_ms === null || e.end_ms === undefined ? h('span', { class: 'badge err' }, 'open') : null, ' ',
          h('a', { href: link('/traces', eventTraceParams(e)), class: 'muted' }, 'traces'),
          h('div', { class: 'tile-expl', title: e.explanation || '' }, e.explanation || ''))))
        : emptyBox('No anomaly events recorded.', 'tile-anomalies-empty'));
    }, signal);
    return t.el;
  }

  function hallucinationTile(signal, range) {
    const t = tile('hallucination', 'Hallucination index per model',
      link('/quality', { metric: 'hallucination_index', by: 'model' }), 'quality →');
    guarded(t, 'Loading the hallucination index', async () => {
      const stepS = niceStep(range.end - range.start, 60, 10);
      const data = await apiGet('api/v1/quality', {
        metric: 'hallucination_index', by: 'model', start: range.start, end: range.end, step: formatStep(stepS),
      }, { signal });
      if (signal.aborted) return;
      const series = Array.isArray(data && data.series) ? data.series : [];
      if (!series.length) {
        setChildren(t.body, emptyBox(data && data.empty_reason ? data.empty_reason : 'No scored answers in this range.', 'tile-hallucination-empty'));
        return;
      }
      const rows = series.map((s) => ({ group: s.group, last: lastValue(s.points), points: s.points }))
        .sort((a, b) => (b.last ?? -1) - (a.last ?? -1));
      setChildren(t.body, h('table', { class: 'kv tile-table', 'data-testid': 'tile-hallucination-table' },
        h('thead', {}, h('tr', {}, h('th', {}, 'model'), h('th', { class: 'num' }, 'last'), h('th', {}, `${range.label.toLowerCase()}`))),
        h('tbody', {}, rows.map((r) => h('tr', { 'data-testid': 'overview-model', 'data-model': r.group },
          h('td', {}, h('a', { href: link('/traces', tracesFilter('model', r.group)) }, r.group || '(none)')),
          h('td', { class: 'num', 'data-testid': 'overview-model-last' }, formatNumber(r.last, 3)),
          h('td', {}, sparkline(r.points)))))));
    }, signal);
    return t.el;
  }

  function run(force) {
    const params = route.params;
    const range = timeRange(params);
    const key = `${params.get('tenant')}|${range.since || `${range.start}-${range.end}`}`;
    if (!force && key === lastKey) return;
    lastKey = key;
    if (controller) controller.abort();
    controller = new AbortController();
    const { signal } = controller;
    setChildren(grid,
      rateTile('spans', 'spans', 'Spans', 'spans', 'spans', link('/traces'), signal, range),
      rateTile('logs', 'logs', 'Log lines', 'lines', 'log lines', link('/logs'), signal, range),
      metricsTile(signal, range),
      detectorsTile(signal),
      hallucinationTile(signal, range),
      anomaliesTile(signal));
  }

  run(false);
  return {
    update(r) {
      route = r;
      run(false);
      return true;
    },
    unmount() {
      if (controller) controller.abort();
    },
  };
}
