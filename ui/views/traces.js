// `#/traces`: the trace search. The filter form maps onto `GET api/v1/traces/search` (see
// docs/traces.md); every filter lives in the URL, so a search is a shareable link. Results: one
// row per trace, newest first; "More" appends the next page (the answer's `next_cursor`, same
// filters and time range).

import { apiData, apiGet, isAbort } from '../api.js';
import { h, loadingBox, errorBox, emptyBox, setChildren } from '../dom.js';
import { link, navigate, globalParams, timeRange } from '../route.js';
import {
  formatDuration, formatTime, formatIsoUtc, escapeHtml, formatCount, formatCost,
} from '../format.js';

/** The fragment of the last search shown, for the trace view's "back to traces" link. */
let lastSearch = null;

/** The last search's fragment when it was for `tenant`, else null. */
export function lastSearchHash(tenant) {
  return lastSearch && lastSearch.tenant === tenant ? lastSearch.hash : null;
}

/** Results per page, and the server's largest `limit`. */
export const PAGE = 50;
const MAX_LIMIT = 10000;

/**
 * The form's fields: URL key, label, input kind. Keys the API takes as they are go straight
 * through; `route`, `user`, `conversation` and `attr` become `attr=key=value` conditions.
 */
const FIELDS = [
  { key: 'service', label: 'Service', values: 'service' },
  { key: 'name', label: 'Span name' },
  { key: 'model', label: 'Model', values: 'model' },
  { key: 'provider', label: 'Provider', values: 'provider' },
  { key: 'operation', label: 'Operation', values: 'operation' },
  { key: 'status', label: 'Status', options: [['', 'any'], ['error', 'error'], ['ok', 'ok'], ['unset', 'unset']] },
  { key: 'min_duration', label: 'Min duration', placeholder: '250ms, 2s, 1m30s' },
  { key: 'route', label: 'Route', values: 'route', attr: 'app.route', placeholder: '/chat/support' },
  { key: 'user', label: 'User', attr: 'user.id', placeholder: 'user.id' },
  { key: 'conversation', label: 'Conversation', attr: 'gen_ai.conversation.id', placeholder: 'gen_ai.conversation.id' },
  { key: 'attr', label: 'Attributes', placeholder: 'key=value; key=~regex', multi: true },
  { key: 'min_hallucination', label: 'Min hallucination', type: 'number', step: '0.05', min: '0', placeholder: '0.5' },
  { key: 'sort', label: 'Sort', options: [['', 'newest first'], ['duration', 'longest first']] },
];

/** Splits the attribute field (`a=1; b!=2`) into conditions. */
export function splitAttrs(text) {
  return String(text || '').split(';').map((s) => s.trim()).filter(Boolean);
}

/**
 * The `api/v1/traces/search` parameters for the view's URL parameters and time range (unix
 * seconds).
 */
export function searchParams(params, range) {
  const q = {};
  for (const f of FIELDS) {
    if (f.attr || f.multi) continue;
    const v = (params.get(f.key) || '').trim();
    if (v) q[f.key] = v;
  }
  const attrs = [];
  for (const f of FIELDS) {
    if (!f.attr) continue;
    const v = (params.get(f.key) || '').trim();
    if (v) attrs.push(`${f.attr}=${v}`);
  }
  for (const v of params.getAll('attr')) attrs.push(...splitAttrs(v));
  if (attrs.length) q.attr = attrs;
  q.start = range.start;
  q.end = range.end;
  q.limit = limitOf(params);
  return q;
}

function limitOf(params) {
  const n = Number(params.get('limit'));
  return Number.isInteger(n) && n > 0 ? Math.min(n, MAX_LIMIT) : PAGE;
}

/** A number from the answer, or null. */
function num(v) {
  if (v === null || v === undefined || v === '') return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/**
 * Tokens, cost and quality of a whole trace, from the totals the search answers with each
 * trace (every span of the trace, not only the matched ones listed):
 * `{input, output, cost, hallucination, entropy, llm}`, each null when no span reports it.
 */
export function traceGenAi(t) {
  return {
    input: num(t && t.input_tokens),
    output: num(t && t.output_tokens),
    cost: num(t && t.cost),
    hallucination: num(t && t.max_hallucination_index),
    entropy: num(t && t.max_entropy_mean),
    llm: num(t && t.llm_calls) ?? 0,
  };
}

/** The hue for a hallucination index: 120 (green) at 0 to 0 (red) at 1 and above. */
export function hallucinationHue(v) {
  const x = Math.min(Math.max(Number(v) || 0, 0), 1);
  return Math.round(120 * (1 - x));
}

function genAiCells(t) {
  const g = traceGenAi(t);
  const over = `over the trace's ${g.llm} LLM call${g.llm === 1 ? '' : 's'}`;
  const tokens = g.input === null && g.output === null ? '-'
    : `${g.input === null ? '-' : formatCount(g.input)} / ${g.output === null ? '-' : formatCount(g.output)}`;
  const hall = g.hallucination === null ? '-'
    : `<span class="hi-pill" style="--hi-hue:${hallucinationHue(g.hallucination)}">${escapeHtml(g.hallucination.toFixed(2))}</span>`;
  return [
    `<td class="t-tokens num" data-testid="trace-tokens" title="input / output tokens, summed ${escapeHtml(over)}">${escapeHtml(tokens)}</td>`,
    `<td class="t-cost num" data-testid="trace-cost" title="cost, summed ${escapeHtml(over)}">${escapeHtml(g.cost === null ? '-' : formatCost(g.cost))}</td>`,
    `<td class="t-hall num" data-testid="trace-hallucination" title="highest hallucination index ${escapeHtml(over)}">${hall}</td>`,
    `<td class="t-entropy num" data-testid="trace-entropy" title="highest mean token entropy (nats) ${escapeHtml(over)}">${escapeHtml(g.entropy === null ? '-' : g.entropy.toFixed(2))}</td>`,
  ].join('');
}

/** The results' `<tr>` rows as one HTML string. */
export function rowsHtml(traces) {
  const out = [];
  for (const t of traces) {
    const id = escapeHtml(t.trace_id);
    const matched = Array.isArray(t.spans) ? t.spans : [];
    // A trace with an error span anywhere (the search answers the count for the whole trace).
    const error = Number(t.error_spans) > 0;
    // Models of the matched spans, when the filters matched only part of the trace.
    const models = t.matched < t.span_count
      ? [...new Set(matched.map((s) => s.model || (s.gen_ai && s.gen_ai.request_model)).filter(Boolean))] : [];
    const hall = traceGenAi(t).hallucination;
    out.push(
      `<tr data-testid="trace-row" data-trace-id="${id}" data-hallucination="${hall === null ? '' : escapeHtml(hall)}" class="trace-row${error ? ' err' : ''}" tabindex="0">`,
      `<td class="t-start" title="${escapeHtml(formatIsoUtc(t.start_unix_nano))}">`,
      `<a href="${escapeHtml(link(`/trace/${t.trace_id}`))}">${escapeHtml(formatTime(t.start_unix_nano))}</a></td>`,
      `<td class="t-service">${escapeHtml(t.root_service_name || '')}</td>`,
      `<td class="t-name">${escapeHtml(t.root_span_name || '(root span missing)')}</td>`,
      `<td class="t-dur num">${escapeHtml(formatDuration(t.duration_nano))}</td>`,
      `<td class="t-spans num">${escapeHtml(t.span_count ?? '')}</td>`,
      `<td class="t-matched">${escapeHtml(t.matched ?? '')}`,
      error ? ' <span class="badge err" title="a matched span has status error">error</span>' : '',
      models.map((m) => ` <span class="badge">${escapeHtml(m)}</span>`).join(''),
      '</td>',
      genAiCells(t),
      '</tr>');
  }
  return out.join('');
}

/** Mounts the view into `root`; answers `{update, unmount}`. */
export function mount(root, route) {
  let controller = null;
  let lastKey = null;
  let valuesLoaded = false;

  const form = h('form', { class: 'filters card', 'data-testid': 'trace-search-form' });
  const datalists = h('div', { hidden: true });
  const inputs = {};
  for (const f of FIELDS) {
    const id = `filter-${f.key}`;
    let input;
    if (f.options) {
      input = h('select', { id, name: f.key, 'data-testid': id },
        f.options.map(([v, label]) => h('option', { value: v }, label)));
    } else {
      input = h('input', {
        id, name: f.key, 'data-testid': id, type: f.type || 'text', step: f.step, min: f.min,
        placeholder: f.placeholder || '', autocomplete: 'off', spellcheck: 'false',
        list: f.values ? `values-${f.key}` : null,
      });
      if (f.values) datalists.append(h('datalist', { id: `values-${f.key}` }));
    }
    inputs[f.key] = input;
    form.append(h('div', { class: `field field-${f.key}` }, h('label', { for: id }, f.label), input));
  }
  form.append(datalists, h('div', { class: 'field actions' },
    h('button', { type: 'submit', class: 'primary', 'data-testid': 'search-submit' }, 'Search'),
    h('button', { type: 'button', 'data-testid': 'search-reset', onclick: reset }, 'Reset')));
  /** The form's filters (as typed, maybe not searched yet) added to `p`. */
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
    navigate('/traces', p);
    // Same URL as now: search again anyway (fresh "last hour").
    if (lastKey === keyOf(p)) run(true);
  });

  const summary = h('div', { class: 'summary', 'data-testid': 'trace-summary', 'aria-live': 'polite' });
  const status = h('div', { class: 'status-slot' });
  const tbody = h('tbody');
  const table = h('table', { class: 'results', 'data-testid': 'trace-results' },
    h('thead', {}, h('tr', {},
      h('th', {}, 'Start'), h('th', {}, 'Root service'), h('th', {}, 'Root span'),
      h('th', { class: 'num' }, 'Duration'), h('th', { class: 'num' }, 'Spans'),
      h('th', {}, 'Matched'),
      h('th', { class: 'num', title: 'input / output tokens of the trace\'s LLM calls' }, 'Tokens in / out'),
      h('th', { class: 'num', title: 'cost of the trace\'s LLM calls' }, 'Cost'),
      h('th', { class: 'num', title: 'highest hallucination index of the trace\'s answers' }, 'Halluc.'),
      h('th', { class: 'num', title: 'highest mean token entropy (nats) of the trace\'s answers' }, 'Entropy'))),
    tbody);
  const more = h('button', { type: 'button', class: 'more', 'data-testid': 'trace-more', hidden: true },
    'More');
  /** The search shown: its query, the next page's cursor, traces shown, the range's label. */
  let page = null;
  more.addEventListener('click', () => loadMore());
  tbody.addEventListener('click', (ev) => {
    if (ev.target.closest('a')) return; // the link navigates by itself (and opens new tabs)
    const tr = ev.target.closest('tr[data-trace-id]');
    if (tr) window.location.hash = link(`/trace/${tr.dataset.traceId}`);
  });
  tbody.addEventListener('keydown', (ev) => {
    const tr = ev.target.closest('tr[data-trace-id]');
    if (tr && ev.key === 'Enter') window.location.hash = link(`/trace/${tr.dataset.traceId}`);
  });

  root.append(h('section', { class: 'view traces-view' },
    h('h1', {}, 'Traces'), form, status, summary, table, more));

  function reset() {
    navigate('/traces', globalParams(route.params));
  }

  function keyOf(params) {
    const p = new URLSearchParams(params);
    p.sort();
    return p.toString();
  }

  function fillForm(params) {
    for (const f of FIELDS) {
      inputs[f.key].value = f.multi ? params.getAll(f.key).join('; ') : (params.get(f.key) || '');
    }
  }

  async function loadValues(range, tenantKey) {
    if (valuesLoaded === tenantKey) return;
    valuesLoaded = tenantKey;
    for (const f of FIELDS) {
      if (!f.values) continue;
      apiGet('api/v1/quality/values', { field: f.values, start: range.start, end: range.end },
        { quiet401: true })
        .then((body) => {
          const list = form.querySelector(`#values-${f.key}`);
          const vals = body && Array.isArray(body.values) ? body.values : [];
          if (list) setChildren(list, vals.map((v) => h('option', { value: v })));
        })
        .catch(() => {}); // suggestions only: the form works without them
    }
  }

  async function run(force) {
    const params = route.params;
    const key = keyOf(params);
    if (!force && key === lastKey) return;
    lastKey = key;
    lastSearch = { hash: window.location.hash, tenant: params.get('tenant') || '' };
    fillForm(params);
    const range = timeRange(params);
    loadValues(range, params.get('tenant') || '');
    if (controller) controller.abort();
    controller = new AbortController();
    const signal = controller.signal;
    const q = searchParams(params, range);
    more.disabled = true;
    setChildren(status, loadingBox(`Searching traces (${range.label.toLowerCase()})…`));
    page = null;
    try {
      const data = await apiData('api/v1/traces/search', q, { signal });
      if (signal.aborted) return;
      const traces = Array.isArray(data && data.traces) ? data.traces : [];
      tbody.innerHTML = rowsHtml(traces);
      page = { q, label: range.label.toLowerCase(), shown: 0 };
      showPage(data, traces.length);
      setChildren(status, traces.length ? null
        : emptyBox(`No traces match these filters (${range.label.toLowerCase()}).`, 'trace-empty'));
    } catch (e) {
      if (isAbort(e)) return;
      lastKey = null;
      tbody.replaceChildren();
      summary.textContent = '';
      more.hidden = true;
      setChildren(status, errorBox('Searching traces failed', e, () => run(true)));
    }
  }

  /** Updates the summary and the "More" button after a page of `added` traces. */
  function showPage(data, added) {
    page.shown += added;
    page.cursor = data && typeof data.next_cursor === 'string' ? data.next_cursor : null;
    const total = data && Number.isFinite(data.total_traces) ? data.total_traces : page.shown;
    const spans = data && Number.isFinite(data.total_spans) ? data.total_spans : null;
    const left = data && Number.isFinite(data.remaining_traces) ? data.remaining_traces : 0;
    summary.textContent = page.shown
      ? `Showing ${page.shown} of ${total} matching trace${total === 1 ? '' : 's'}` +
        `${spans !== null ? ` (${spans} matching span${spans === 1 ? '' : 's'})` : ''}` +
        ` · ${page.label}`
      : '';
    more.hidden = !page.cursor;
    more.disabled = false;
    more.dataset.remaining = String(left);
    more.textContent = `More (${Math.min(PAGE, left)} of ${left} left)`;
  }

  /** Appends the next page of the search shown. */
  async function loadMore() {
    if (!page || !page.cursor) return;
    const signal = controller ? controller.signal : undefined;
    more.disabled = true;
    more.textContent = 'Loading…';
    try {
      const data = await apiData('api/v1/traces/search', { ...page.q, limit: PAGE, cursor: page.cursor }, { signal });
      if (signal && signal.aborted) return;
      const traces = Array.isArray(data && data.traces) ? data.traces : [];
      tbody.insertAdjacentHTML('beforeend', rowsHtml(traces));
      showPage(data, traces.length);
    } catch (e) {
      if (isAbort(e)) return;
      more.disabled = false;
      more.textContent = 'More';
      setChildren(status, errorBox('Loading more traces failed', e, () => loadMore()));
    }
  }

  run(false);

  return {
    update(r) {
      route = r;
      run(false);
      return true;
    },
    // A new time range searches with the filters as they are in the form.
    pendingParams: () => formParams(),
    unmount() {
      if (controller) controller.abort();
    },
  };
}
