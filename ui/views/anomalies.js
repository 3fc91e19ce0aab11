// `#/anomalies[?detector=<name>]`: the anomaly detectors (`GET api/v1/detectors`: state, model,
// series, training progress, last error or fallback), a form to create one, "run now"
// (`POST api/v1/detectors/<name>/run`), and for the selected detector its series against its
// band with its anomaly events (`GET api/v1/anomalies?detector=&start=&end=`, ms), shaded on the
// chart and listed. Without a selection, the events of every detector in the time range.
// While a detector is pending or training (and for 10 s after a create or a run) the list
// refreshes every 2 s; a state change redraws the selected detector's chart.

import { apiGet, apiPost, isAbort } from '../api.js';
import { h, loadingBox, errorBox, emptyBox, setChildren } from '../dom.js';
import { link, updateParams, timeRange } from '../route.js';
import { formatUnixSeconds, formatDuration, formatNumber, formatIsoUtc } from '../format.js';
import { detectorForm } from './detector-form.js';
import { loadSeries, renderDetectorCharts, eventTraceParams, labelText } from './detector-chart.js';

const POLL_MS = 2000;
const EVENT_LIMIT = 200;

function msTime(ms) {
  return ms === null || ms === undefined ? '-' : formatUnixSeconds(Number(ms) / 1000);
}

/** Training progress as a fraction (0..1) and a line of text, or null. */
export function progressOf(p) {
  if (!p || !p.series_total) return null;
  const within = p.epochs ? Math.min(1, (p.epoch || 0) / p.epochs) : 0;
  const frac = Math.min(1, ((p.series_done || 0) + within) / p.series_total);
  const parts = [`series ${p.series_done || 0}/${p.series_total}`];
  if (p.epochs) parts.push(`step ${p.epoch || 0}/${p.epochs}`);
  if (p.train_loss !== null && p.train_loss !== undefined) parts.push(`loss ${formatNumber(p.train_loss, 3)}`);
  if (p.val_loss !== null && p.val_loss !== undefined) parts.push(`val ${formatNumber(p.val_loss, 3)}`);
  return { frac, text: parts.join(' · ') };
}

function stateCell(st) {
  const state = st.state || 'unknown';
  const prog = state === 'training' ? progressOf(st.progress) : null;
  return h('td', { class: 'd-state' },
    h('span', { class: `badge state-${state}`, 'data-testid': 'detector-state' }, state),
    prog ? h('div', { class: 'progress', 'data-testid': 'detector-progress' },
      h('progress', { max: '1', value: String(prog.frac) }), h('span', { class: 'muted' }, prog.text)) : null);
}

/** The events as a table (`data-testid="anomaly-list"`, rows `anomaly-row`). */
export function eventsTable(events, withDetector) {
  return h('table', { class: 'results events-table', 'data-testid': 'anomaly-list' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Start'), h('th', {}, 'Duration'),
      withDetector ? h('th', {}, 'Detector') : null, h('th', {}, 'Level'), h('th', { class: 'num' }, 'Severity'),
      h('th', {}, 'Series'), h('th', {}, 'Explanation'), h('th', {}, ''))),
    h('tbody', {}, events.map((ev) => {
      const open = ev.end_ms === null || ev.end_ms === undefined;
      return h('tr', {
        'data-testid': 'anomaly-row', 'data-detector': ev.detector, 'data-level': ev.level || '',
        'data-event-id': ev.id, class: `level-${ev.level || ''}`,
      },
      h('td', { title: formatIsoUtc(Number(ev.start_ms) * 1e6) }, msTime(ev.start_ms)),
      h('td', {}, open ? h('span', { class: 'badge err' }, 'open') : formatDuration((Number(ev.end_ms) - Number(ev.start_ms)) * 1e6)),
      withDetector ? h('td', {}, h('a', { href: link('/anomalies', { detector: ev.detector }) }, ev.detector)) : null,
      h('td', {}, h('span', { class: `badge level-${ev.level || ''}` }, ev.level || '-'),
        ev.direction ? h('span', { class: 'muted' }, ` ${ev.direction}`) : null),
      h('td', { class: 'num' }, formatNumber(ev.severity, 2)),
      h('td', { class: 'mono wrap' }, labelText(ev.labels)),
      h('td', { class: 'wrap' }, ev.explanation || ''),
      h('td', {}, h('a', { href: link('/traces', eventTraceParams(ev)), 'data-testid': 'anomaly-traces-link' }, 'traces →')));
    })));
}

/** Mounts the view into `root`; answers `{update, unmount}`. */
export function mount(root, route) {
  let listController = null;
  let detailController = null;
  let pollTimer = null;
  // After a create or "run now", keep refreshing for a while even if nothing is training yet
  // (the scheduler picks the run up within a tick).
  let pollUntil = 0;
  let detectors = [];
  let lastKey = null;
  let shownState = null;
  let form = null;

  const newButton = h('button', { type: 'button', class: 'primary', 'data-testid': 'detector-new' }, 'New detector');
  const formSlot = h('div', {});
  const listStatus = h('div', { class: 'status-slot', 'data-testid': 'detector-list-status' });
  const tbody = h('tbody');
  const table = h('table', { class: 'results detectors', 'data-testid': 'detector-list', hidden: true },
    h('thead', {}, h('tr', {}, h('th', {}, 'Detector'), h('th', {}, 'State'), h('th', {}, 'Model'),
      h('th', { class: 'num' }, 'Series'), h('th', {}, 'Step / history'), h('th', {}, 'Direction · α'),
      h('th', {}, 'Last scored'), h('th', {}, 'Error / fallback'), h('th', {}, ''))),
    tbody);
  const runStatus = h('div', { class: 'status-slot run-status', 'data-testid': 'detector-run-status', 'aria-live': 'polite' });
  const detail = h('div', { class: 'detector-detail' });
  // With a detector selected its chart comes first, the list below it.
  const section = h('section', { class: 'view anomalies-view' },
    h('div', { class: 'view-head' }, h('h1', {}, 'Anomaly detectors'), newButton),
    formSlot, runStatus, listStatus, table, detail);
  root.append(section);

  newButton.addEventListener('click', () => {
    if (form) {
      form.remove();
      form = null;
      return;
    }
    form = detectorForm(async (det) => {
      form.remove();
      form = null;
      setChildren(runStatus, h('div', { class: 'state ok', 'data-testid': 'detector-created' },
        `Detector ${det.name} created; it trains in the background.`));
      pollUntil = Date.now() + 10000;
      await loadDetectors(true);
      updateParams({ detector: det.name });
    }, () => {
      form.remove();
      form = null;
    });
    formSlot.append(form);
    form.querySelector('input').focus();
  });

  async function runNow(name) {
    setChildren(runStatus, loadingBox(`Asking the server to run ${name}…`));
    try {
      await apiPost(`api/v1/detectors/${encodeURIComponent(name)}/run`);
      setChildren(runStatus, h('div', { class: 'state ok', 'data-testid': 'detector-run-ok' },
        `${name}: run queued (it trains on its whole history, then scores).`));
      pollUntil = Date.now() + 10000;
      loadDetectors(true);
    } catch (e) {
      if (isAbort(e)) return;
      setChildren(runStatus, errorBox(`Running ${name} failed`, e, null, 'detector-run-error'));
    }
  }

  function runButton(name) {
    return h('button', { type: 'button', 'data-testid': 'detector-run', 'data-name': name, onclick: () => runNow(name) }, 'Run now');
  }

  function renderList() {
    const selected = route.params.get('detector');
    section.classList.toggle('has-detail', !!selected);
    setChildren(tbody, detectors.map((d) => {
      const st = d.status || {};
      return h('tr', {
        'data-testid': 'detector-row', 'data-name': d.name, 'data-state': st.state || '',
        class: d.name === selected ? 'selected' : '',
      },
      h('td', {}, h('a', { href: link('/anomalies', { detector: d.name }), 'data-testid': 'detector-link' }, d.name),
        d.description ? h('div', { class: 'muted' }, d.description) : null),
      stateCell(st),
      h('td', {}, (d.model && d.model.kind) || '-', d.mode === 'service' ? h('span', { class: 'muted' }, ' (service)') : null),
      h('td', { class: 'num' }, st.series ?? '-'),
      h('td', {}, `${d.step || '-'} / ${d.history || '-'}`),
      h('td', {}, `${d.direction || 'both'} · ${d.alpha ?? '-'}`),
      h('td', {}, msTime(st.last_scored_ms)),
      h('td', { class: 'wrap' },
        st.error ? h('div', { class: 'd-error', 'data-testid': 'detector-error' }, st.error) : null,
        st.fallback ? h('div', { class: 'muted', 'data-testid': 'detector-fallback' }, `fallback: ${st.fallback}`) : null),
      h('td', {}, runButton(d.name)));
    }));
    table.hidden = !detectors.length;
  }

  function schedulePoll() {
    clearTimeout(pollTimer);
    if (Date.now() < pollUntil ||
        detectors.some((d) => d.status && (d.status.state === 'pending' || d.status.state === 'training'))) {
      pollTimer = setTimeout(() => loadDetectors(false), POLL_MS);
    }
  }

  async function loadDetectors(showLoading) {
    if (listController) listController.abort();
    listController = new AbortController();
    const { signal } = listController;
    if (showLoading) setChildren(listStatus, loadingBox('Loading detectors…'));
    try {
      const data = await apiGet('api/v1/detectors', null, { signal });
      if (signal.aborted) return;
      detectors = Array.isArray(data && data.detectors) ? data.detectors : [];
      setChildren(listStatus, detectors.length ? null
        : emptyBox('No detectors yet. Create one with "New detector" (or POST api/v1/detectors).', 'detector-list-empty'));
      renderList();
      const name = route.params.get('detector');
      const det = detectors.find((d) => d.name === name);
      const state = det && det.status ? det.status.state : null;
      if (name && state !== shownState && shownState !== null) loadDetail(true);
      shownState = state;
      schedulePoll();
    } catch (e) {
      if (isAbort(e)) return;
      setChildren(listStatus, errorBox('Loading detectors failed', e, () => loadDetectors(true)));
    }
  }

  async function loadDetail(force) {
    const name = route.params.get('detector');
    const range = timeRange(route.params);
    const key = `${name}|${route.params.get('tenant')}|${range.since || `${range.start}-${range.end}`}`;
    if (!force && key === lastKey) return;
    lastKey = key;
    if (detailController) detailController.abort();
    detailController = new AbortController();
    const { signal } = detailController;
    const charts = h('div', { class: 'detector-charts', 'data-testid': 'detector-charts' });
    const eventsSlot = h('div', { 'data-testid': 'anomaly-events' });
    let det = name ? detectors.find((d) => d.name === name) : null;
    if (name && !det) {
      // Not in the list loaded before (created elsewhere since): ask for it by name.
      try {
        det = await apiGet(`api/v1/detectors/${encodeURIComponent(name)}`, null, { signal });
      } catch (e) {
        if (isAbort(e)) return;
        setChildren(detail, errorBox(`Loading detector "${name}" failed`, e, () => loadDetail(true), 'detector-detail-error'));
        return;
      }
      if (signal.aborted) return;
    }
    if (det) {
      setChildren(detail, h('div', { class: 'card', 'data-testid': 'detector-detail', 'data-name': det.name },
        h('div', { class: 'view-head' }, h('h2', {}, det.name), runButton(det.name),
          h('a', { href: link('/anomalies', { detector: null }) }, 'all detectors')),
        det.mode === 'service'
          ? h('div', { class: 'mono wrap' }, Object.entries(det.roles || {}).map(([r, v]) => h('div', {}, `${r}: ${v && v.query}`)))
          : h('pre', { class: 'query', 'data-testid': 'detector-query-text' }, det.query || ''),
        charts, h('h3', {}, `Anomaly events (${range.label.toLowerCase()})`), eventsSlot));
      setChildren(charts, loadingBox(`Loading ${det.name}'s series and band…`));
    } else {
      setChildren(detail, h('div', { class: 'card' }, h('h2', {}, `Anomaly events of every detector (${range.label.toLowerCase()})`), eventsSlot));
    }
    setChildren(eventsSlot, loadingBox('Loading anomaly events…'));
    const evParams = { start: range.start * 1000, end: range.end * 1000, limit: EVENT_LIMIT };
    if (name) evParams.detector = name;
    const eventsP = apiGet('api/v1/anomalies', evParams, { signal })
      .then((d) => (Array.isArray(d && d.anomalies) ? d.anomalies : []));
    let events = [];
    try {
      events = await eventsP;
      if (signal.aborted) return;
      setChildren(eventsSlot, events.length ? eventsTable(events, !name)
        : emptyBox(`No anomaly events${name ? ` of ${name}` : ''} in this range.`, 'anomaly-empty'));
    } catch (e) {
      if (isAbort(e)) return;
      setChildren(eventsSlot, errorBox('Loading anomaly events failed', e, () => loadDetail(true)));
    }
    if (!det) return;
    try {
      const data = await loadSeries(det, range, signal);
      if (signal.aborted) return;
      renderDetectorCharts(charts, det, data, events, range);
    } catch (e) {
      if (isAbort(e)) return;
      setChildren(charts, errorBox(`Loading ${det.name}'s series failed`, e, () => loadDetail(true), 'detector-chart-error'));
    }
  }

  async function start() {
    await loadDetectors(true);
    loadDetail(false);
  }

  start();
  return {
    update(r) {
      const before = route.params.get('detector');
      route = r;
      renderList();
      if (before !== r.params.get('detector')) {
        const det = detectors.find((d) => d.name === r.params.get('detector'));
        shownState = det && det.status ? det.status.state : null;
      }
      loadDetail(false);
      return true;
    },
    unmount() {
      clearTimeout(pollTimer);
      if (listController) listController.abort();
      if (detailController) detailController.abort();
    },
  };
}
