// Log lines (`GET api/v1/logs/search` answers, docs/logs.md) as an HTML table: time, severity,
// service, body, and the span a line belongs to (a button that selects it in the trace view).

import { escapeHtml, formatTime, formatIsoUtc, formatValue, nanosToMillis } from '../format.js';

/** The severity class of a line: trace, debug, info, warn, error, fatal or unknown. */
export function severityClass(line) {
  const n = Number(line.severity_number);
  if (Number.isFinite(n) && n > 0) {
    return ['trace', 'debug', 'info', 'warn', 'error', 'fatal'][Math.min(Math.floor((n - 1) / 4), 5)];
  }
  const t = String(line.severity_text || '').toLowerCase();
  if (t.startsWith('warn')) return 'warn';
  if (t.startsWith('err')) return 'error';
  for (const k of ['trace', 'debug', 'info', 'fatal']) if (t.startsWith(k)) return k;
  return 'unknown';
}

/** Lines sorted oldest first (the API answers newest first). */
export function sortOldestFirst(lines) {
  return [...lines].sort((a, b) => nanosToMillis(a.time_unix_nano) - nanosToMillis(b.time_unix_nano));
}

/**
 * The lines as `<table data-testid="trace-logs-table">`, one `<tr data-testid="log-line">` each;
 * `spanIds` (a Set) marks which spans exist in the shown trace (their ids become buttons).
 */
export function logLinesHtml(lines, spanIds = new Set()) {
  const rows = lines.map((l) => {
    const sev = severityClass(l);
    const body = typeof l.body === 'string' ? l.body : formatValue(l.body);
    const attrs = l.attributes && Object.keys(l.attributes).length
      ? Object.entries(l.attributes).map(([k, v]) => `${k}=${formatValue(v)}`).join(' ') : '';
    const span = l.span_id
      ? (spanIds.has(l.span_id)
        ? `<button type="button" class="link-button mono" data-action="select-span" data-span-id="${escapeHtml(l.span_id)}">${escapeHtml(l.span_id)}</button>`
        : `<span class="mono">${escapeHtml(l.span_id)}</span>`)
      : '';
    return `<tr data-testid="log-line" class="sev-${sev}" data-span-id="${escapeHtml(l.span_id || '')}">` +
      `<td class="l-time" title="${escapeHtml(formatIsoUtc(l.time_unix_nano))}">${escapeHtml(formatTime(l.time_unix_nano, { date: false }))}</td>` +
      `<td class="l-sev"><span class="sev">${escapeHtml(l.severity_text || sev)}</span></td>` +
      `<td class="l-svc">${escapeHtml(l.service_name || '')}</td>` +
      `<td class="l-body">${escapeHtml(body)}${attrs ? `<div class="l-attrs">${escapeHtml(attrs)}</div>` : ''}</td>` +
      `<td class="l-span">${span}</td></tr>`;
  });
  return '<table class="log-lines" data-testid="trace-logs-table"><thead><tr><th>Time</th>' +
    '<th>Severity</th><th>Service</th><th>Body</th><th>Span</th></tr></thead>' +
    `<tbody>${rows.join('')}</tbody></table>`;
}
