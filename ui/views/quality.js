// `#/quality?metric=hallucination_index&by=model`: an LLM quality measure over time, one line
// per group (`GET api/v1/quality`, docs/quality.md), with a legend whose entries link to the
// group's traces. The step is picked from the time range (about 120 points); `service`,
// `model` and `provider` in the URL filter the spans as the API does.

import { apiGet, isAbort } from '../api.js';
import { h, loadingBox, errorBox, setChildren } from '../dom.js';
import { link, updateParams, timeRange } from '../route.js';
import { formatNumber, formatPercent } from '../format.js';
import {
  createChart, linePath, extent, attachHover, colorOf, niceStep, formatStep, svg,
} from '../chart.js';

/** The API's metrics, with how to show their values. */
export const METRICS = [
  { key: 'hallucination_index', label: 'Hallucination index', unit: '0 grounded … 1 made up' },
  { key: 'token_entropy_mean', label: 'Mean token entropy', unit: 'nats' },
  { key: 'low_confidence_tokens', label: 'Low-confidence tokens', unit: 'tokens with p < 0.5 per answer' },
  { key: 'context_expansion', label: 'Context expansion', unit: 'input growth per output token' },
  { key: 'cache_hit_ratio', label: 'Cache hit ratio', unit: 'cached input share', percent: true },
];

/** The API's groupings (`attr.<key>` is typed into the attribute field). */
export const GROUPS = [
  { key: 'model', label: 'model', traces: 'model' },
  { key: 'provider', label: 'provider', traces: 'provider' },
  { key: 'service', label: 'service', traces: 'service' },
  { key: 'operation', label: 'operation', traces: 'operation' },
  { key: 'route', label: 'route', traces: 'route' },
];

const FILTERS = ['service', 'model', 'provider'];

/** About this many points per line. */
const POINTS = 120;

/** The value of `metric` as text. */
export function formatMetric(metric, v) {
  if (v === null || v === undefined || !Number.isFinite(Number(v))) return '-';
  const m = METRICS.find((x) => x.key === metric);
  return m && m.percent ? formatPercent(v) : formatNumber(v, 3);
}

/** The traces view's filters for `group` of grouping `by`, or null when it has none. */
export function tracesFilter(by, group) {
  const g = GROUPS.find((x) => x.key === by);
  if (g) return { [g.traces]: group };
  if (by.startsWith('attr.') && by.length > 5) return { attr: `${by.slice(5)}=${group}` };
  return null;
}

/** The last non-null value of `points` (`[[ms, v], ...]`), or null. */
export function lastValue(points) {
  for (let i = points.length - 1; i >= 0; i -= 1) {
    if (points[i][1] !== null && Number.isFinite(Number(points[i][1]))) return Number(points[i][1]);
  }
  return null;
}

function meanValue(points) {
  const vals = points.map((p) => p[1]).filter((v) => v !== null && Number.isFinite(Number(v)));
  return vals.length ? vals.reduce((a, b) => a + Number(b), 0) / vals.length : null;
}

/** Mounts the view into `root`; answers `{update, unmount}`. */
export function mount(root, route) {
  let controller = null;
  let lastKey = null;

  const metricSel = h('select', { id: 'quality-metric', 'data-testid': 'quality-metric' },
    METRICS.map((m) => h('option', { value: m.key }, m.label)));
  const bySel = h('select', { id: 'quality-by', 'data-testid': 'quality-by' },
    GROUPS.map((g) => h('option', { value: g.key }, g.label)),
    h('option', { value: 'attr' }, 'attribute…'));
  const attrInput = h('input', {
    id: 'quality-attr', 'data-testid': 'quality-attr', placeholder: 'attribute key, e.g. user.id',
    autocomplete: 'off', spellcheck: 'false',
  });
  const attrField = h('div', { class: 'field', hidden: true },
    h('label', { for: 'quality-attr' }, 'Attribute'), attrInput);
  const filters = h('div', { class: 'chips', 'data-testid': 'quality-filters' });
  const form = h('form', { class: 'toolbar card', 'data-testid': 'quality-form' },
    h('div', { class: 'field' }, h('label', { for: 'quality-metric' }, 'Metric'), metricSel),
    h('div', { class: 'field' }, h('label', { for: 'quality-by' }, 'Group by'), bySel),
    attrField,
    h('div', { class: 'field actions' }, h('button', { type: 'submit', class: 'primary', 'data-testid': 'quality-apply' }, 'Show')),
    filters);
  const apply = () => {
    const by = bySel.value === 'attr' ? (attrInput.value.trim() ? `attr.${attrInput.value.trim()}` : null) : bySel.value;
    if (bySel.value === 'attr' && !by) {
      attrInput.focus();
      return;
    }
    updateParams({ metric: metricSel.value, by });
  };
  metricSel.addEventListener('change', apply);
  bySel.addEventListener('change', () => {
    attrField.hidden = bySel.value !== 'attr';
    if (bySel.value !== 'attr') apply();
    else attrInput.focus();
  });
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    apply();
  });

  const status = h('div', { class: 'status-slot', 'data-testid': 'quality-status' });
  const summary = h('div', { class: 'summary', 'data-testid': 'quality-summary' });
  const chartWrap = h('div', { class: 'chart-wrap' });
  const legend = h('div', { class: 'series-legend', 'data-testid': 'quality-legend' });
  const card = h('div', { class: 'card chart-card', hidden: true }, summary, chartWrap, legend);
  const section = h('section', { class: 'view quality-view' }, h('h1', {}, 'LLM quality'), form, status, card);
  root.append(section);

  function fillForm(params) {
    const metric = params.get('metric') || 'hallucination_index';
    const by = params.get('by') || 'model';
    metricSel.value = METRICS.some((m) => m.key === metric) ? metric : 'hallucination_index';
    if (by.startsWith('attr.')) {
      bySel.value = 'attr';
      attrInput.value = by.slice(5);
    } else {
      bySel.value = GROUPS.some((g) => g.key === by) ? by : 'model';
    }
    attrField.hidden = bySel.value !== 'attr';
    setChildren(filters, FILTERS.filter((k) => params.get(k)).map((k) => h('span', { class: 'chip' },
      `${k} = ${params.get(k)} `,
      h('button', { type: 'button', class: 'link-button', 'aria-label': `Remove ${k} filter`, onclick: () => updateParams({ [k]: null }) }, '×'))));
  }

  function render(data, metric, by, range, stepS) {
    const series = Array.isArray(data.series) ? data.series : [];
    const startMs = range.start * 1000;
    const endMs = range.end * 1000;
    const ext = extent(...series.map((s) => s.points.map((p) => p[1])));
    const chart = createChart({
      width: chartWrap.clientWidth || section.clientWidth || 900, height: 300, startMs, endMs,
      yMin: Math.min(0, ext ? ext[0] : 0), yMax: ext ? ext[1] : 1, testid: 'quality-chart',
      label: `${metric} by ${by}`, yFormat: (v) => formatMetric(metric, v),
    });
    series.forEach((s, i) => {
      const color = colorOf(i);
      const { d, dots } = linePath(s.points, chart.x, chart.y);
      chart.plot.append(svg('path', {
        d: d || 'M0,0', class: 'series-line', stroke: color, 'data-testid': 'quality-series',
        'data-group': s.group, 'data-points': s.points.filter((p) => p[1] !== null).length,
      }));
      for (const [px, py] of dots) chart.plot.append(svg('circle', { cx: px, cy: py, r: 2.5, fill: color }));
    });
    setChildren(chartWrap, chart.svg);
    attachHover(chartWrap, chart, (ms) => {
      const stepMs = stepS * 1000;
      const b = Math.floor(ms / stepMs) * stepMs;
      const rows = series.map((s, i) => {
        const p = s.points.find((q) => q[0] === b);
        return { label: s.group || '(none)', value: formatMetric(metric, p ? p[1] : null), color: colorOf(i) };
      });
      return { ms: b, title: new Date(b).toLocaleString(), rows };
    });
    setChildren(legend, series.map((s, i) => {
      const filter = s.group ? tracesFilter(by, s.group) : null;
      return h('div', { class: 'legend-item', 'data-testid': 'quality-legend-item', 'data-group': s.group },
        h('i', { class: 'swatch', style: `background:${colorOf(i)}` }),
        h('span', { class: 'lg-name' }, s.group || '(none)'),
        h('span', { class: 'muted' }, `last ${formatMetric(metric, lastValue(s.points))} · mean ${formatMetric(metric, meanValue(s.points))}`),
        filter ? h('a', { href: link('/traces', filter), 'data-testid': 'quality-traces-link' }, 'traces →') : null);
    }));
    const m = METRICS.find((x) => x.key === metric);
    summary.textContent = `${m ? m.label : metric}${m ? ` (${m.unit})` : ''} by ${by}, ` +
      `${series.length} group${series.length === 1 ? '' : 's'}, step ${formatStep(stepS)} · ${range.label.toLowerCase()}`;
  }

  async function run(force) {
    const params = route.params;
    const key = params.toString();
    if (!force && key === lastKey) return;
    lastKey = key;
    fillForm(params);
    const metric = metricSel.value;
    const by = params.get('by') || 'model';
    const range = timeRange(params);
    const stepS = niceStep(range.end - range.start, POINTS, 10);
    const q = { metric, by, start: range.start, end: range.end, step: formatStep(stepS) };
    for (const k of FILTERS) if (params.get(k)) q[k] = params.get(k);
    if (controller) controller.abort();
    controller = new AbortController();
    const { signal } = controller;
    setChildren(status, loadingBox(`Loading ${metric} by ${by}…`));
    try {
      const data = await apiGet('api/v1/quality', q, { signal });
      if (signal.aborted) return;
      const series = Array.isArray(data && data.series) ? data.series : [];
      if (!series.length) {
        card.hidden = true;
        setChildren(status, h('div', { class: 'state empty', 'data-testid': 'quality-empty' },
          h('strong', {}, `No ${metric} data by ${by} (${range.label.toLowerCase()}). `),
          h('span', { 'data-testid': 'quality-explain-empty' }, data && data.empty_reason ? data.empty_reason : 'No span in the range and filters carries this measure.'),
          data && data.docs ? h('div', { class: 'hint' }, 'How to send it: ', h('code', {}, data.docs)) : null));
        return;
      }
      setChildren(status);
      card.hidden = false;
      render(data, metric, by, range, data.step_ms ? data.step_ms / 1000 : stepS);
    } catch (e) {
      if (isAbort(e)) return;
      lastKey = null;
      card.hidden = true;
      setChildren(status, errorBox(`Loading ${metric} by ${by} failed`, e, () => run(true)));
    }
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
