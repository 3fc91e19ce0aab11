// `#/` (also `#/overview`): the landing page. Tiles over the shared time range, each loading on
// its own and linking to its view: spans and log lines per second (`POST api/v1/aggregate`,
// `rate` and `count`), metric names (`GET api/v1/label/__name__/values`), the most recent
// anomaly events (`GET api/v1/anomalies?limit=10`), the detectors and their states
// (`GET api/v1/detectors`), and the hallucination index per model (last value of each group,
// `GET api/v1/quality`). Above them, what the tenant has stored whatever the range
// (`GET api/v1/overview`: rows and time span per signal, metric series) and which tenant it is.

import { apiGet, apiData, apiPostData, isAbort, tenantsInfo } from '../api.js';
import { h, loadingBox, errorBox, emptyBox, setChildren } from '../dom.js';
import { link, timeRange } from '../route.js';
import {
  formatNumber, formatUnixSeconds, formatCount, formatDuration, formatIsoUtc, nanosBig, nanosToSeconds,
} from '../format.js';
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

const SIGNALS = [
  { signal: 'spans', title: 'Spans', path: '/traces' },
  { signal: 'logs', title: 'Log lines', path: '/logs' },
  { signal: 'samples', title: 'Metric samples', path: '/causality' },
];

/**
 * The time span of a stored signal (`start_unix_nano`/`end_unix_nano`, decimal strings):
 * `{text, title, nanos, start, end}` (start/end in unix seconds, widened to whole seconds), or
 * null when nothing is stored. The length is computed in BigInt: no nanosecond is lost.
 */
export function storedSpan(sig) {
  const a = nanosBig(sig && sig.start_unix_nano);
  const b = nanosBig(sig && sig.end_unix_nano);
  if (a === null || b === null) return null;
  const from = formatUnixSeconds(nanosToSeconds(sig.start_unix_nano));
  const to = formatUnixSeconds(nanosToSeconds(sig.end_unix_nano));
  const sameDay = from.slice(0, 10) === to.slice(0, 10);
  return {
    text: `${from} → ${sameDay ? to.slice(11) : to}`,
    title: `${formatIsoUtc(sig.start_unix_nano)} → ${formatIsoUtc(sig.end_unix_nano)}`,
    nanos: Number(b - a),
    start: Number(a / 1000000000n),
    end: Number((b + 999999999n) / 1000000000n),
  };
}

/** Which tenant this is, and how many the caller can pick (`api/v1/tenants`, read by the app). */
function tenantLine(viewed) {
  const info = tenantsInfo();
  const n = info.tenants.length;
  return h('span', { class: 'muted stored-tenant', 'data-testid': 'stored-tenant', 'data-tenant': viewed, 'data-tenants': n },
    'tenant ', h('strong', {}, viewed), ' · ',
    info.auth ? 'the only one your token can read'
      : `${n} tenant${n === 1 ? '' : 's'} to pick from (top right)`);
}

function storedSignal(def, sig) {
  const span = storedSpan(sig);
  const rows = Number(sig.rows) || 0;
  const unflushed = Number(sig.unflushed_rows) || 0;
  const segs = Number(sig.segments) || 0;
  return h('div', { class: 'stored-sig', 'data-testid': `stored-${def.signal}`, 'data-rows': String(sig.rows ?? 0) },
    h('div', { class: 'stored-label' }, h('a', { href: link(def.path) }, def.title)),
    h('div', { class: 'big' }, h('span', { class: 'stored-rows' }, formatCount(rows)), h('span', { class: 'unit' }, rows === 1 ? 'row' : 'rows')),
    span
      ? h('div', { class: 'stored-range', title: `${span.title} (open this range)` },
        h('a', { href: link(def.path, { since: null, start: span.start, end: span.end }), 'data-testid': `stored-${def.signal}-range` }, span.text))
      : h('div', { class: 'stored-range muted' }, 'nothing stored'),
    h('div', { class: 'muted' }, span ? h('span', { 'data-testid': `stored-${def.signal}-span` }, `${formatDuration(span.nanos)} of data · `) : null,
      `${formatCount(segs)} segment${segs === 1 ? '' : 's'}`, unflushed ? ` · ${formatCount(unflushed)} unflushed` : ''));
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

  function storedTile(signal) {
    const body = h('div', { class: 'tile-body' }, loadingBox('Loading…', 'tile-stored-loading'));
    const head = h('div', { class: 'tile-head' }, h('h2', {}, 'Stored'), tenantLine(route.params.get('tenant') || tenantsInfo().tenants[0] || 'default'));
    const el = h('section', { class: 'tile card tile-stored', 'data-testid': 'tile-stored' }, head, body);
    guarded({ body }, 'Reading what is stored', async () => {
      const data = await apiData('api/v1/overview', null, { signal });
      if (signal.aborted) return;
      const signals = Array.isArray(data && data.signals) ? data.signals : [];
      head.replaceChild(tenantLine(String((data && data.tenant) || 'default')), head.lastChild);
      setChildren(body, h('div', { class: 'stored-row' },
        SIGNALS.map((def) => storedSignal(def, signals.find((x) => x && x.signal === def.signal) || { rows: 0 })),
        h('div', { class: 'stored-sig', 'data-testid': 'stored-series', 'data-series': String(data && data.series !== undefined ? data.series : '') },
          h('div', { class: 'stored-label' }, h('a', { href: link('/causality') }, 'Metric series')),
          h('div', { class: 'big' }, h('span', {}, formatCount(data && data.series)), h('span', { class: 'unit' }, 'series')),
          h('div', { class: 'muted' }, 'all time, this tenant'))));
    }, signal);
    return el;
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
      storedTile(signal),
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
