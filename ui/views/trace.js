// `#/trace/<trace id>[?span=<span id>]`: one trace (`GET api/v1/traces/<id>`) as a waterfall
// with its critical path marked, the details of the selected span, and the log lines
// correlated with the trace (`GET api/v1/logs/search?trace_id=...`, trace extent ± 60 s).

import { apiData, isAbort } from '../api.js';
import { h, loadingBox, errorBox, emptyBox, setChildren } from '../dom.js';
import { link, updateParams } from '../route.js';
import { formatDuration, formatTime, formatIsoUtc } from '../format.js';
import { layoutTrace, rowsHtml, axisHtml, legendHtml } from './waterfall.js';
import { renderSpanDetails } from './span-details.js';
import { lastSearchHash } from './traces.js';
import { logLinesHtml, sortOldestFirst } from './log-lines.js';

/** Log lines asked for, and the margin around the trace's extent (seconds). */
const LOG_LIMIT = 200;
const LOG_MARGIN_S = 60;

/** Mounts the view into `root`; answers `{update, unmount}`. */
export function mount(root, route) {
  const traceId = (route.segments[1] || '').toLowerCase();
  const controller = new AbortController();
  let detailsController = null;
  let layout = null;
  let spansById = new Map();
  let allSpans = [];
  let rowOf = new Map();
  const collapsed = new Set();
  let selected = null;
  let panel = null;

  const backHref = () => lastSearchHash(route.params.get('tenant') || '') || link('/traces');
  const header = h('div', { class: 'trace-head', 'data-testid': 'trace-header' },
    h('a', { class: 'back', href: backHref(), 'data-testid': 'back-to-traces' }, '← Traces'),
    h('h1', { 'data-testid': 'trace-title' }, 'Trace ', h('code', {}, traceId)));
  const status = h('div', { class: 'status-slot', 'data-testid': 'trace-status' });
  const legend = h('div', { class: 'legend', 'data-testid': 'waterfall-legend' });
  const axis = h('div', { class: 'wf-axis', 'aria-hidden': 'true' });
  const waterfall = h('div', {
    class: 'waterfall', 'data-testid': 'waterfall', role: 'tree', tabindex: '0',
    'aria-label': 'Spans of the trace',
  });
  const scroller = h('div', { class: 'wf-scroll' }, axis, waterfall);
  const wfCard = h('div', { class: 'wf-card card', hidden: true }, legend, scroller);
  const body = h('div', { class: 'trace-body' }, wfCard);
  const logs = h('div', { class: 'trace-logs', 'data-testid': 'trace-logs' });
  const logsSection = h('section', { class: 'logs-section card', hidden: true },
    h('h2', { 'data-testid': 'trace-logs-title' }, 'Logs'), logs);
  root.append(h('section', { class: 'view trace-view' }, header, status, body, logsSection));

  waterfall.addEventListener('click', (ev) => {
    const row = ev.target.closest('.span-row');
    if (!row) return;
    if (ev.target.closest('[data-action="toggle"]')) {
      toggle(row.dataset.spanId);
      return;
    }
    select(row.dataset.spanId, { updateUrl: true });
  });
  waterfall.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') {
      closeDetails();
      return;
    }
    if (ev.key !== 'ArrowDown' && ev.key !== 'ArrowUp') return;
    ev.preventDefault();
    const cur = selected && waterfall.querySelector(`[data-span-id="${CSS.escape(selected)}"]`);
    const next = cur
      ? (ev.key === 'ArrowDown' ? cur.nextElementSibling : cur.previousElementSibling)
      : waterfall.firstElementChild;
    if (next) select(next.dataset.spanId, { updateUrl: true, scroll: true });
  });
  logs.addEventListener('click', (ev) => {
    const b = ev.target.closest('[data-action="select-span"]');
    if (b) select(b.dataset.spanId, { updateUrl: true, scroll: true });
  });

  function renderRows() {
    const top = scroller.scrollTop;
    waterfall.innerHTML = rowsHtml(layout, collapsed, selected);
    scroller.scrollTop = top;
  }

  function toggle(spanId) {
    if (collapsed.has(spanId)) collapsed.delete(spanId);
    else collapsed.add(spanId);
    renderRows();
  }

  /** Expands every collapsed ancestor of `spanId` (so its row is shown). */
  function reveal(spanId) {
    let i = rowOf.get(spanId);
    let changed = false;
    while (i !== undefined && i >= 0) {
      const p = layout.rows[i].parentRow;
      if (p >= 0 && collapsed.delete(layout.rows[p].span.span_id)) changed = true;
      i = p;
    }
    if (changed) renderRows();
  }

  function select(spanId, opts = {}) {
    const span = spansById.get(spanId);
    if (!span) return;
    reveal(spanId);
    if (selected && selected !== spanId) {
      const old = waterfall.querySelector(`.span-row.selected`);
      if (old) old.classList.remove('selected');
    }
    selected = spanId;
    const row = waterfall.querySelector(`[data-span-id="${CSS.escape(spanId)}"]`);
    if (row) {
      row.classList.add('selected');
      if (opts.scroll) row.scrollIntoView({ block: 'nearest' });
      if (opts.updateUrl) row.focus({ preventScroll: true });
    }
    if (!panel) {
      panel = h('aside', { class: 'span-details card', 'data-testid': 'span-details' });
      panel.addEventListener('click', (ev) => {
        if (ev.target.closest('[data-action="close"]')) closeDetails();
      });
      body.append(panel);
      body.classList.add('with-details');
    }
    if (detailsController) detailsController.abort();
    detailsController = new AbortController();
    renderSpanDetails(panel, span, {
      traceId, traceStart: layout.traceStart, critical: layout.critical,
      hueOf: (svc) => layout.hues.get(svc || '') ?? 210,
      spans: allSpans,
      signal: detailsController.signal,
    });
    panel.dataset.spanId = spanId;
    panel.scrollTop = 0;
    if (opts.updateUrl) updateParams({ span: spanId }, { replace: true, silent: true });
  }

  function closeDetails() {
    if (detailsController) detailsController.abort();
    if (panel) panel.remove();
    panel = null;
    body.classList.remove('with-details');
    const old = waterfall.querySelector('.span-row.selected');
    if (old) old.classList.remove('selected');
    selected = null;
    updateParams({ span: null }, { replace: true, silent: true });
  }

  function renderHeader(data) {
    const spans = data.spans;
    const root = spans.find((s) => s.span_id === data.root) || layout.rows[0]?.span;
    const services = new Set(spans.map((s) => s.service_name));
    const errors = spans.filter((s) => s.status && (s.status === 'error' || s.status.code === 'error')).length;
    const orphans = Array.isArray(data.orphans) ? data.orphans.length : 0;
    const facts = [
      ['trace id', h('code', { 'data-testid': 'trace-id' }, data.trace_id || traceId)],
      ['start', h('span', { title: formatIsoUtc(layout.traceStart) }, formatTime(layout.traceStart))],
      ['duration', formatDuration(layout.traceEnd - layout.traceStart)],
      ['spans', String(spans.length)],
      ['services', String(services.size)],
      ['errors', String(errors)],
    ];
    if (orphans) facts.push(['orphans', `${orphans} (parent never received)`]);
    setChildren(header,
      h('a', { class: 'back', href: backHref(), 'data-testid': 'back-to-traces' }, '← Traces'),
      h('h1', { 'data-testid': 'trace-title' },
        root ? root.name : 'Trace',
        root ? h('span', { class: 'muted' }, ` ${root.service_name || ''}`) : null),
      h('dl', { class: 'facts' }, facts.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])));
    document.title = `Sightline · ${root ? root.name : traceId}`;
  }

  async function load() {
    if (!/^[0-9a-f]{1,32}$/.test(traceId)) {
      setChildren(status, errorBox('Cannot show the trace',
        new Error(`"${traceId}" is not a trace id (up to 32 hex digits)`)));
      return;
    }
    setChildren(status, loadingBox(`Loading trace ${traceId}…`));
    let data;
    try {
      data = await apiData(`api/v1/traces/${traceId}`, null, { signal: controller.signal });
    } catch (e) {
      if (isAbort(e)) return;
      setChildren(status, errorBox(`Loading trace ${traceId} failed`, e, () => load()));
      return;
    }
    if (controller.signal.aborted) return;
    const spans = Array.isArray(data && data.spans) ? data.spans : [];
    if (!spans.length) {
      setChildren(status, emptyBox(`Trace ${traceId} has no spans.`));
      return;
    }
    data.spans = spans;
    const t0 = performance.now();
    layout = layoutTrace(spans, data.critical_path);
    spansById = new Map(spans.map((s) => [s.span_id, s]));
    allSpans = spans;
    rowOf = new Map(layout.rows.map((r, i) => [r.span.span_id, i]));
    legend.innerHTML = legendHtml();
    axis.innerHTML = axisHtml(layout);
    waterfall.innerHTML = rowsHtml(layout, collapsed, null);
    waterfall.dataset.renderMs = (performance.now() - t0).toFixed(1);
    waterfall.dataset.spanCount = String(spans.length);
    wfCard.hidden = false;
    setChildren(status);
    renderHeader(data);
    const want = route.params.get('span');
    if (want && spansById.has(want)) select(want, { scroll: true });
    loadLogs();
  }

  async function loadLogs() {
    logsSection.hidden = false;
    setChildren(logs, loadingBox('Loading the logs of this trace…', 'trace-logs-loading'));
    const start = Math.floor(layout.traceStart / 1e9) - LOG_MARGIN_S;
    const end = Math.ceil(layout.traceEnd / 1e9) + LOG_MARGIN_S;
    try {
      const data = await apiData('api/v1/logs/search',
        { trace_id: traceId, limit: LOG_LIMIT, start, end }, { signal: controller.signal });
      if (controller.signal.aborted) return;
      const lines = Array.isArray(data && data.lines) ? data.lines : [];
      const matched = data && Number.isFinite(data.matched) ? data.matched : lines.length;
      logsSection.querySelector('h2').textContent = lines.length < matched
        ? `Logs (${lines.length} newest of ${matched})` : `Logs (${lines.length})`;
      if (!lines.length) {
        setChildren(logs, emptyBox(`No log lines carry this trace id (trace ± ${LOG_MARGIN_S} s).`,
          'trace-logs-empty'));
        return;
      }
      logs.innerHTML = logLinesHtml(sortOldestFirst(lines), new Set(spansById.keys()));
    } catch (e) {
      if (isAbort(e)) return;
      setChildren(logs, errorBox('Loading the logs of this trace failed', e, () => loadLogs(),
        'trace-logs-error'));
    }
  }

  load();

  return {
    update(r) {
      if ((r.segments[1] || '').toLowerCase() !== traceId) return false;
      route = r;
      const want = r.params.get('span');
      if (!layout || want === selected) return true;
      if (want && spansById.has(want)) select(want, { scroll: true });
      else if (!want) closeDetails();
      return true;
    },
    unmount() {
      controller.abort();
      if (detailsController) detailsController.abort();
    },
  };
}
