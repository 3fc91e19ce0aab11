// `#/causality?cause=<PromQL>&effect=<PromQL>&max_lag=10[&step=60s]`: does the cause series
// help predict the effect series? `POST api/v1/detect/granger` over the shared time range
// (unix seconds; each query must give one series; with `"gaps": "longest_run"` the server tests
// the longest stretch where both have values and names it, shown above the result; `&gaps=refuse`
// in the URL asks for the whole range or an error). Shows the tests per lag
// (`data-testid="granger-table"`), the lag the BIC picks, and a cause -> effect graph with the
// lag and p on its edge. The README's "LLM quality and causality" section has the demo's edges.

import { apiPostData, isAbort } from '../api.js';
import { h, loadingBox, errorBox, setChildren } from '../dom.js';
import { navigate, globalParams, timeRange } from '../route.js';
import { formatNumber, formatDuration, formatUnixSeconds } from '../format.js';
import { svg, niceStep, parseDuration, formatStep } from '../chart.js';
import { bhQValues } from '../stats.js';

export const EXAMPLE = {
  cause: 'sightline_quality_hallucination_index{operation="chat"}',
  effect: 'shop_conversion_rate',
};
const DEFAULT_MAX_LAG = 10;
/** At most this many points per series when the step is picked from the range. */
const MAX_POINTS = 5000;

/** A p-value as text: `3.0e-110`, `0.0421`, `<1e-300`. */
export function formatP(p) {
  const n = Number(p);
  if (p === null || p === undefined || !Number.isFinite(n)) return '-';
  if (n === 0) return '<1e-300';
  return n < 1e-4 ? n.toExponential(1) : String(Number(n.toFixed(4)));
}

/** The step (seconds) for a range: the URL's, else 60 s or coarser to stay under MAX_POINTS. */
export function grangerStep(params, range) {
  const own = parseDuration(params.get('step'));
  return Number.isFinite(own) && own > 0 ? own : niceStep(range.end - range.start, MAX_POINTS, 60);
}

function edgeGraph(cause, effect, lag, p, stepS) {
  const strong = Number(p) < 0.05;
  const w = 760;
  const bw = 250;
  const g = svg('svg', { class: 'granger-graph', viewBox: `0 0 ${w} 96`, width: '100%', role: 'img', 'data-testid': 'granger-graph', 'aria-label': 'cause to effect' });
  const box = (x, label, testid) => svg('g', { 'data-testid': testid },
    svg('rect', { x, y: 26, width: bw, height: 44, rx: 6, class: 'node' }),
    svg('text', { x: x + bw / 2, y: 53, 'text-anchor': 'middle', class: 'node-label', text: label.length > 32 ? `${label.slice(0, 31)}…` : label },
      svg('title', { text: label })));
  g.append(svg('defs', {}, svg('marker', { id: 'granger-arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' },
    svg('path', { d: 'M0,0L10,5L0,10Z', class: strong ? 'arrow strong' : 'arrow' }))));
  g.append(box(2, cause, 'granger-cause-node'), box(w - bw - 2, effect, 'granger-effect-node'));
  g.append(svg('g', { 'data-testid': 'granger-edge', 'data-lag': lag, 'data-p': p, 'data-significant': String(strong) },
    svg('line', { x1: bw + 6, y1: 48, x2: w - bw - 6, y2: 48, class: strong ? 'edge strong' : 'edge', 'marker-end': 'url(#granger-arrow)' }),
    svg('text', { x: w / 2, y: 38, 'text-anchor': 'middle', class: 'edge-label', text: `lag ${lag} (${formatDuration(lag * stepS * 1e9)})` }),
    svg('text', { x: w / 2, y: 68, 'text-anchor': 'middle', class: 'edge-label', text: `p = ${formatP(p)}${strong ? '' : ' · no evidence at 5 %'}` })));
  return g;
}

function resultView(data, cause, effect, stepS) {
  const lags = Array.isArray(data.lags) ? data.lags : [];
  const ic = new Map((data.information_criteria || []).map((r) => [r.lag, r]));
  const bic = data.selected_lag ? data.selected_lag.bic : null;
  const aic = data.selected_lag ? data.selected_lag.aic : null;
  const chosen = lags.find((l) => l.lag === bic) || lags[0];
  const p = chosen && chosen.ssr_ftest ? chosen.ssr_ftest.p : null;
  // Benjamini-Hochberg over the lags tried: one F-test p per lag.
  const qs = bhQValues(lags.map((l) => (l.ssr_ftest ? l.ssr_ftest.p : null)));
  const rows = lags.map((l, i) => {
    const c = ic.get(l.lag) || {};
    return h('tr', { 'data-testid': 'granger-row', 'data-lag': l.lag, 'data-chosen': l.lag === bic ? 'true' : 'false', class: l.lag === bic ? 'chosen' : '' },
      h('td', { class: 'num' }, String(l.lag), l.lag === bic ? h('span', { class: 'badge' }, 'BIC') : null,
        l.lag === aic ? h('span', { class: 'badge' }, 'AIC') : null),
      h('td', { class: 'num' }, formatNumber(l.ssr_ftest && l.ssr_ftest.F, 3)),
      h('td', { class: 'num' }, formatP(l.ssr_ftest && l.ssr_ftest.p)),
      h('td', { class: `num${qs[i] !== null && qs[i] < 0.05 ? ' q-strong' : ''}`, 'data-testid': 'granger-q', 'data-q': qs[i] ?? '' }, formatP(qs[i])),
      h('td', { class: 'num' }, formatP(l.ssr_chi2test && l.ssr_chi2test.p)),
      h('td', { class: 'num' }, formatP(l.lrtest && l.lrtest.p)),
      h('td', { class: 'num' }, formatP(l.params_ftest && l.params_ftest.p)),
      h('td', { class: 'num' }, formatNumber(l.partial_r2, 3)),
      h('td', { class: 'num' }, formatNumber(c.aic, 1)),
      h('td', { class: 'num' }, formatNumber(c.bic, 1)));
  });
  const stat = (data.stationarity || []).map((s) => `${s.differences} difference${s.differences === 1 ? '' : 's'}: ADF p cause ${formatP(s.cause && s.cause.adf && s.cause.adf.pvalue)}, effect ${formatP(s.effect && s.effect.adf && s.effect.adf.pvalue)}`);
  const r = data.range;
  return h('div', { class: 'granger-result', 'data-testid': 'granger-result' },
    r ? h('p', { class: r.dropped ? 'hint' : 'muted', 'data-testid': 'granger-range', 'data-start': r.start, 'data-end': r.end, 'data-points': r.points, 'data-dropped': r.dropped },
      `Tested on ${formatUnixSeconds(r.start)} – ${formatUnixSeconds(r.end)} (${r.points} steps)` +
      (r.dropped ? `: the longest stretch where both series have values; ${r.dropped} step${r.dropped === 1 ? '' : 's'} of the range left out.` : '.')) : null,
    chosen ? edgeGraph(cause, effect, chosen.lag, p, stepS) : null,
    h('p', { class: 'summary', 'data-testid': 'granger-summary' },
      `${data.nobs ?? '?'} points at ${formatStep(stepS)}; ` +
      `${data.differenced ? `series differenced ${data.differenced}× to be stationary; ` : ''}` +
      `lag chosen by BIC: ${bic ?? '-'}, by AIC: ${aic ?? '-'}. p values are per test (F and χ² on the residual sums of squares, likelihood ratio, F on the parameters).`),
    h('table', { class: 'results granger-table', 'data-testid': 'granger-table' },
      h('thead', {}, h('tr', {}, h('th', { class: 'num' }, 'Lag'), h('th', { class: 'num' }, 'F'),
        h('th', { class: 'num' }, 'p (F)'),
        h('th', { class: 'num', title: 'Benjamini-Hochberg q-value of p (F) over the lags tried' }, 'q (F, BH)'),
        h('th', { class: 'num' }, 'p (χ²)'), h('th', { class: 'num' }, 'p (LR)'),
        h('th', { class: 'num' }, 'p (params F)'), h('th', { class: 'num' }, 'partial R²'),
        h('th', { class: 'num' }, 'AIC'), h('th', { class: 'num' }, 'BIC'))),
      h('tbody', {}, rows)),
    lags.length ? h('p', { class: 'muted granger-q-note', 'data-testid': 'granger-q-note' },
      `q is the Benjamini-Hochberg q-value of p (F) across the ${qs.filter((q) => q !== null).length} lags tried: ` +
      'calling every lag with q < 0.05 a finding keeps the expected false discovery rate over the lags at 5 %.') : null,
    stat.length ? h('div', { class: 'muted' }, `Stationarity (ADF): ${stat.join('; ')}`) : null);
}

/** Mounts the view into `root`; answers `{update, unmount}`. */
export function mount(root, route) {
  let controller = null;
  let lastKey = null;
  const input = (key, attrs) => h('input', { id: `granger-${key}`, name: key, 'data-testid': `granger-${key}`, autocomplete: 'off', spellcheck: 'false', ...attrs });
  const cause = input('cause', { placeholder: EXAMPLE.cause, required: true });
  const effect = input('effect', { placeholder: EXAMPLE.effect, required: true });
  const maxLag = input('max-lag', { type: 'number', min: '1', max: '100', step: '1', placeholder: String(DEFAULT_MAX_LAG) });
  const step = input('step', { placeholder: 'auto (60s)' });
  const field = (id, label, el, cls = '') => h('div', { class: `field ${cls}` }, h('label', { for: id }, label), el);
  const form = h('form', { class: 'filters granger-form card', 'data-testid': 'granger-form' },
    field('granger-cause', 'Cause (PromQL, one series)', cause, 'wide'),
    field('granger-effect', 'Effect (PromQL, one series)', effect, 'wide'),
    field('granger-max-lag', 'Max lag (steps)', maxLag),
    field('granger-step', 'Step', step),
    h('div', { class: 'field actions' },
      h('button', { type: 'submit', class: 'primary', 'data-testid': 'granger-run' }, 'Test'),
      h('button', { type: 'button', 'data-testid': 'granger-example', onclick: () => { cause.value = EXAMPLE.cause; effect.value = EXAMPLE.effect; } }, 'Demo example'),
      h('button', { type: 'button', 'data-testid': 'granger-swap', title: 'Test the other direction', onclick: () => { const c = cause.value; cause.value = effect.value; effect.value = c; } }, 'Swap ⇄')));
  const formParams = (p = new URLSearchParams()) => {
    if (cause.value.trim()) p.set('cause', cause.value.trim());
    if (effect.value.trim()) p.set('effect', effect.value.trim());
    if (maxLag.value.trim()) p.set('max_lag', maxLag.value.trim());
    if (step.value.trim()) p.set('step', step.value.trim());
    return p;
  };
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const p = formParams(globalParams(route.params));
    navigate('/causality', p);
    if (p.toString() === lastKey) run(true);
  });
  const out = h('div', { class: 'status-slot', 'data-testid': 'granger-status' });
  root.append(h('section', { class: 'view causality-view' }, h('h1', {}, 'Causality (Granger)'),
    h('p', { class: 'muted' }, 'Does the past of the cause improve the prediction of the effect beyond the effect\'s own past? ',
      'Both queries are evaluated over the time range at the step; each must return one series. Where either has no value, the test runs on the longest stretch where both have values, named above the result.'),
    form, out));

  async function run(force) {
    const params = route.params;
    const key = params.toString();
    if (!force && key === lastKey) return;
    lastKey = key;
    cause.value = params.get('cause') || '';
    effect.value = params.get('effect') || '';
    maxLag.value = params.get('max_lag') || '';
    step.value = params.get('step') || '';
    if (!params.get('cause') || !params.get('effect')) {
      setChildren(out, h('div', { class: 'state empty', 'data-testid': 'granger-empty' },
        'Pick a cause and an effect (PromQL), e.g. ', h('code', {}, EXAMPLE.cause), ' → ', h('code', {}, EXAMPLE.effect),
        ' with the demo\'s data (the "Demo example" button fills them in).'));
      return;
    }
    const range = timeRange(params);
    const stepS = grangerStep(params, range);
    const lag = Number(params.get('max_lag')) || DEFAULT_MAX_LAG;
    if (controller) controller.abort();
    controller = new AbortController();
    const { signal } = controller;
    setChildren(out, loadingBox(`Testing ${params.get('cause')} → ${params.get('effect')} at lags 1…${lag}…`));
    const body = {
      cause_query: params.get('cause'), effect_query: params.get('effect'),
      start: Math.ceil(range.start / stepS) * stepS, end: Math.floor(range.end / stepS) * stepS, step: stepS, max_lag: lag,
      gaps: params.get('gaps') === 'refuse' ? 'refuse' : 'longest_run',
    };
    try {
      const data = await apiPostData('api/v1/detect/granger', body, { signal });
      if (signal.aborted) return;
      setChildren(out, resultView(data || {}, body.cause_query, body.effect_query, stepS));
    } catch (e) {
      if (isAbort(e)) return;
      lastKey = null;
      setChildren(out, errorBox('The Granger test failed', e, () => run(true), 'granger-error'));
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
