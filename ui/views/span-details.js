// The span details panel of the trace view: identity, timing, status, attributes, resource,
// events and links; for LLM spans also the GenAI fields, the prompt and answer (from
// `gen_ai.input.messages` / `gen_ai.output.messages`) and the answer's tokens coloured by
// entropy (`GET api/v1/quality/tokens`, nothing shown when it answers 404).

import { apiGet, isAbort } from '../api.js';
import {
  escapeHtml, formatDuration, formatTime, formatIsoUtc, formatValue, formatNumber,
} from '../format.js';
import { tokensBlockHtml } from './tokens.js';
import { loadEvidence, EVALUATION_SPAN } from './evidence.js';
import { link } from '../route.js';

/** Attribute values longer than this are folded behind a `<details>`. */
const FOLD_CHARS = 240;

const PROMPT_KEYS = ['gen_ai.system_instructions', 'gen_ai.input.messages'];
const ANSWER_KEYS = ['gen_ai.output.messages'];

/**
 * Whether `span` is an LLM call: `gen_ai.operation.name` or `gen_ai.request.model` in its
 * attributes, or in the promoted `gen_ai` columns the native API returns them in.
 */
export function isLlmSpan(span) {
  const a = span.attributes || {};
  const g = span.gen_ai || {};
  return !!(a['gen_ai.operation.name'] || a['gen_ai.request.model'] ||
    g.operation_name || g.request_model);
}

function isError(span) {
  const st = span.status;
  return st === 'error' || (st && st.code === 'error');
}

function valueHtml(v) {
  const text = formatValue(v);
  if (text.length <= FOLD_CHARS) return `<span class="v">${escapeHtml(text)}</span>`;
  let pretty = text;
  if (typeof v === 'string' && /^\s*[[{]/.test(v)) {
    try {
      pretty = JSON.stringify(JSON.parse(v), null, 2);
    } catch {
      pretty = text;
    }
  }
  return `<details class="fold"><summary>${escapeHtml(text.slice(0, 120))}… ` +
    `<span class="muted">(${text.length} chars)</span></summary>` +
    `<pre>${escapeHtml(pretty)}</pre></details>`;
}

/** A key/value table; `testid` names it. Empty objects give a muted "none". */
export function kvTableHtml(obj, testid, sorted = true) {
  const entries = Object.entries(obj || {});
  if (!entries.length) return `<div class="muted" data-testid="${testid}">none</div>`;
  if (sorted) entries.sort((a, b) => a[0].localeCompare(b[0]));
  return `<table class="kv" data-testid="${testid}"><tbody>${entries.map(([k, v]) =>
    `<tr><th>${escapeHtml(k)}</th><td>${valueHtml(v)}</td></tr>`).join('')}</tbody></table>`;
}

function partHtml(part) {
  if (part === null || part === undefined) return '';
  if (typeof part === 'string') return `<div class="msg-text">${escapeHtml(part)}</div>`;
  const type = part.type || '';
  if ((type === 'text' || type === 'reasoning' || !type) && typeof part.content === 'string') {
    return `<div class="msg-text${type === 'reasoning' ? ' reasoning' : ''}">${escapeHtml(part.content)}</div>`;
  }
  if (type === 'tool_call') {
    return `<div class="msg-tool">tool call <code>${escapeHtml(part.name || '')}</code>` +
      `<pre>${escapeHtml(formatValue(part.arguments ?? ''))}</pre></div>`;
  }
  if (type === 'tool_call_response') {
    return `<div class="msg-tool">tool result<pre>${escapeHtml(formatValue(part.response ?? part.result ?? ''))}</pre></div>`;
  }
  return `<pre class="msg-other">${escapeHtml(JSON.stringify(part, null, 2))}</pre>`;
}

/**
 * Chat messages (a JSON string in the semantic conventions' shape:
 * `[{"role", "parts": [{"type": "text", "content"}, ...]}]`, or `{"role", "content"}`) as HTML.
 * Text that is not such JSON is shown as it is.
 */
export function messagesHtml(raw) {
  let msgs = raw;
  if (typeof raw === 'string') {
    try {
      msgs = JSON.parse(raw);
    } catch {
      return `<div class="msg"><div class="msg-text">${escapeHtml(raw)}</div></div>`;
    }
  }
  if (!Array.isArray(msgs)) msgs = [msgs];
  return msgs.map((m) => {
    if (m === null || typeof m !== 'object') {
      return `<div class="msg"><div class="msg-text">${escapeHtml(formatValue(m))}</div></div>`;
    }
    const role = m.role || m.type || '';
    let body = '';
    if (Array.isArray(m.parts)) body = m.parts.map(partHtml).join('');
    else if (typeof m.content === 'string') body = partHtml(m.content);
    else if (Array.isArray(m.content)) body = m.content.map(partHtml).join('');
    else if (m.content !== undefined) body = partHtml({ type: 'other', ...m });
    else body = partHtml(m.type === 'text' ? m : { type: 'other', ...m });
    const fin = m.finish_reason ? ` <span class="muted">finish: ${escapeHtml(m.finish_reason)}</span>` : '';
    return `<div class="msg role-${escapeHtml(role)}"><div class="msg-role">${escapeHtml(role)}${fin}</div>${body}</div>`;
  }).join('');
}

function genAiHtml(span) {
  const g = span.gen_ai || {};
  const q = span.quality || {};
  const rows = {};
  for (const [k, v] of Object.entries(g)) {
    if (v === null || v === undefined || (Array.isArray(v) && !v.length)) continue;
    rows[`gen_ai.${k}`] = typeof v === 'number' && !Number.isInteger(v) ? Number(v.toPrecision(6)) : v;
  }
  for (const [k, v] of Object.entries(q)) {
    if (v === null || v === undefined) continue;
    rows[`quality.${k}`] = typeof v === 'number' ? formatNumber(v, 4) : v;
  }
  return kvTableHtml(rows, 'span-genai');
}

function eventsHtml(span, traceStart) {
  const events = Array.isArray(span.events) ? span.events : [];
  if (!events.length) return '<div class="muted" data-testid="span-events">none</div>';
  return `<ol class="events" data-testid="span-events">${events.map((e) =>
    `<li><span class="ev-time" title="${escapeHtml(formatIsoUtc(e.time_unix_nano))}">+${escapeHtml(
      formatDuration(Number(e.time_unix_nano) - traceStart))}</span> <strong>${escapeHtml(e.name || '')}</strong>` +
    `${e.attributes && Object.keys(e.attributes).length ? kvTableHtml(e.attributes, 'event-attributes') : ''}</li>`).join('')}</ol>`;
}

function linksHtml(span) {
  const links = Array.isArray(span.links) ? span.links : [];
  if (!links.length) return '<div class="muted" data-testid="span-links">none</div>';
  return `<ul class="links" data-testid="span-links">${links.map((l) => {
    const t = escapeHtml(l.trace_id || '');
    return `<li><a href="${escapeHtml(link(`/trace/${l.trace_id || ''}`))}">${t}</a> / ${escapeHtml(l.span_id || '')}` +
      `${l.attributes && Object.keys(l.attributes).length ? kvTableHtml(l.attributes, 'link-attributes') : ''}</li>`;
  }).join('')}</ul>`;
}

/**
 * Fills `panel` with the details of `span`. `ctx`: `{traceId, traceStart, critical (span id
 * -> segments), hueOf (service -> hue), spans (all of the trace's), signal}`. Token logprobs
 * and the answer's sentences (supported or not, evidence.js) load afterwards for LLM spans.
 */
export function renderSpanDetails(panel, span, ctx) {
  const st = span.status || {};
  const code = typeof st === 'string' ? st : st.code || 'unset';
  const message = typeof st === 'object' ? st.message || '' : '';
  const start = Number(span.start_unix_nano);
  const segs = ctx.critical.get(span.span_id) || [];
  const cpTime = segs.reduce((acc, [a, b]) => acc + (b - a), 0);
  const scope = span.scope && span.scope.name
    ? `${span.scope.name}${span.scope.version ? ` ${span.scope.version}` : ''}` : '';
  const facts = {
    'span id': span.span_id,
    'parent span id': span.parent_span_id || '(root)',
    kind: span.kind || '',
    start: `${formatTime(span.start_unix_nano)} (+${formatDuration(start - ctx.traceStart)})`,
    duration: formatDuration(span.duration_nano),
    'critical path': segs.length ? `${formatDuration(cpTime)} in ${segs.length} segment${segs.length > 1 ? 's' : ''}` : 'no',
  };
  if (scope) facts.scope = scope;
  if (span.trace_state) facts['trace state'] = span.trace_state;
  const llm = isLlmSpan(span);
  const attrs = span.attributes || {};
  const prompt = PROMPT_KEYS.filter((k) => attrs[k] !== undefined && attrs[k] !== null && attrs[k] !== '');
  const answer = ANSWER_KEYS.filter((k) => attrs[k] !== undefined && attrs[k] !== null && attrs[k] !== '');

  const parts = [
    '<div class="sd-head">',
    `<h2><span class="svc" style="--hue:${ctx.hueOf(span.service_name)}">${escapeHtml(span.service_name || '')}</span> `,
    `${escapeHtml(span.name || '')}</h2>`,
    '<button type="button" class="close" data-testid="span-details-close" data-action="close" aria-label="Close details">×</button>',
    '</div>',
    `<div class="sd-status status-${escapeHtml(code)}" data-testid="span-status">status <strong>${escapeHtml(code)}</strong>`,
    message ? `: ${escapeHtml(message)}` : '', '</div>',
    kvTableHtml(facts, 'span-facts', false),
  ];
  if (llm) {
    parts.push('<h3>GenAI</h3>', genAiHtml(span));
    if (prompt.length) {
      parts.push('<h3>Prompt</h3><div class="messages" data-testid="llm-prompt">',
        prompt.map((k) => messagesHtml(attrs[k])).join(''), '</div>');
    }
    if (answer.length) {
      parts.push('<h3>Answer</h3><div class="messages" data-testid="llm-answer">',
        answer.map((k) => messagesHtml(attrs[k])).join(''), '</div>');
    }
    parts.push('<div class="evidence-slot" data-testid="evidence-slot"></div>');
    parts.push('<div class="tokens-slot" data-testid="tokens-slot"></div>');
  } else if (span.name === EVALUATION_SPAN) {
    parts.push('<div class="evidence-slot" data-testid="evidence-slot"></div>');
  }
  parts.push(
    '<h3>Attributes</h3>', kvTableHtml(attrs, 'span-attributes'),
    '<h3>Resource</h3>', kvTableHtml(span.resource_attributes || span.resource || {}, 'span-resource'),
    `<h3>Events (${Array.isArray(span.events) ? span.events.length : 0})</h3>`, eventsHtml(span, ctx.traceStart),
    `<h3>Links (${Array.isArray(span.links) ? span.links.length : 0})</h3>`, linksHtml(span),
  );
  panel.innerHTML = parts.join('');
  if (isError(span)) panel.classList.add('err');
  else panel.classList.remove('err');

  const evidence = panel.querySelector('.evidence-slot');
  if (evidence) loadEvidence(evidence, span, ctx);
  if (llm && span.name !== EVALUATION_SPAN) loadTokens(panel.querySelector('.tokens-slot'), span, ctx);
}

async function loadTokens(slot, span, ctx) {
  slot.innerHTML = '<div class="state loading" data-testid="tokens-loading">Loading token logprobs…</div>';
  try {
    const data = await apiGet('api/v1/quality/tokens',
      { trace_id: ctx.traceId, span_id: span.span_id }, { signal: ctx.signal });
    if (ctx.signal && ctx.signal.aborted) return;
    slot.innerHTML = `<h3>Answer tokens</h3>${tokensBlockHtml(data)}`;
  } catch (e) {
    if (isAbort(e)) return;
    if (e.status === 404) {
      slot.innerHTML = ''; // the span carries no logprobs: nothing to show
      return;
    }
    slot.innerHTML = `<div class="state error" data-testid="tokens-error" role="alert">` +
      `Loading token logprobs failed: ${escapeHtml(e.message)}</div>`;
  }
}
