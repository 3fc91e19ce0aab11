// An LLM answer sentence by sentence, each marked supported (by which retrieved document or
// context passage, with its coverage and the retriever's score) or unsupported, in the span
// details of the trace view.
//
// Where it comes from (docs/llm-instrumentation.md, docs/quality.md): the stored evidence, the
// `sightline.evaluation.*` attributes (per sentence as JSON in `sightline.evaluation.evidence`:
// character offsets into the answer in Unicode code points, the sentence's text, the best
// passage with its text), found
// * on the answer span itself when it carried its own documents (scored at ingest), or
// * on the answer's evaluation span: a child named `sightline.evaluation` (its attribute
//   `sightline.evaluation.target_span_id` names the answer), written when the trace's
//   retriever spans and the answer are assembled.
// A span with its own documents but no stored evidence (written before evidence was kept) is
// scored here on demand with `POST api/v1/detect/hallucination` (same scorer).

import { apiPost, isAbort } from '../api.js';
import { escapeHtml, formatNumber } from '../format.js';

export const EVALUATION_SPAN = 'sightline.evaluation';
const PREFIX = 'sightline.evaluation.';
const DOCUMENTS_KEY = 'gen_ai.retrieval.documents';
const OUTPUT_KEY = 'gen_ai.output.messages';

/** A JSON attribute (text or an already structured value) parsed, or undefined. */
export function jsonAttr(v) {
  if (v === null || v === undefined) return undefined;
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v);
  } catch {
    return undefined;
  }
}

// Text of output messages, as the server reads it (server/src/otlp/genai/content.rs): `parts`
// of type text, a message's `content` string, `message`, `choices`; joined by newlines.
function messageText(v, out) {
  if (Array.isArray(v)) {
    for (const m of v) messageText(m, out);
  } else if (v && typeof v === 'object') {
    if (Array.isArray(v.parts)) {
      for (const p of v.parts) {
        const isText = !p || p.type === undefined || p.type === null || p.type === 'text';
        if (isText && p && typeof p.content === 'string') out.push(p.content);
      }
    } else if (typeof v.content === 'string') out.push(v.content);
    else if (v.message !== undefined) messageText(v.message, out);
    else if (v.choices !== undefined) messageText(v.choices, out);
  } else if (typeof v === 'string') out.push(v);
}

function indexed(attrs, prefix, suffix) {
  const out = [];
  for (const [k, v] of Object.entries(attrs)) {
    if (!k.startsWith(prefix) || !k.endsWith(suffix) || typeof v !== 'string') continue;
    const i = k.slice(prefix.length, k.length - suffix.length);
    if (/^\d+$/.test(i)) out.push([Number(i), v]);
  }
  return out.sort((a, b) => a[0] - b[0]).map(([, v]) => v);
}

function joined(parts) {
  const text = parts.join('\n');
  return text.trim() ? text : null;
}

/**
 * The answer text of `span` as the server scores it: `gen_ai.output.messages`, OpenInference
 * `llm.output_messages.*`, OpenLLMetry `gen_ai.completion*`, `gen_ai.choice` /
 * `gen_ai.client.inference.operation.details` events, OpenInference `output.value`; or null.
 */
export function answerText(span) {
  const a = span.attributes || {};
  const parts = [];
  if (a[OUTPUT_KEY] !== undefined && a[OUTPUT_KEY] !== null) {
    const j = jsonAttr(a[OUTPUT_KEY]);
    if (j !== undefined) messageText(j, parts);
    else if (typeof a[OUTPUT_KEY] === 'string') parts.push(a[OUTPUT_KEY]);
    return joined(parts);
  }
  const oi = indexed(a, 'llm.output_messages.', '.message.content');
  if (oi.length) return joined(oi);
  const oiParts = Object.entries(a).filter(([k, v]) => k.startsWith('llm.output_messages.') &&
    k.endsWith('.message_content.text') && typeof v === 'string').map(([, v]) => v);
  if (oiParts.length) return joined(oiParts);
  const ol = indexed(a, 'gen_ai.completion.', '.content');
  if (ol.length) return joined(ol);
  if (typeof a['gen_ai.completion'] === 'string') return joined([a['gen_ai.completion']]);
  for (const e of Array.isArray(span.events) ? span.events : []) {
    const ea = e.attributes || {};
    if (e.name === 'gen_ai.client.inference.operation.details') {
      const j = jsonAttr(ea[OUTPUT_KEY]);
      if (j !== undefined) messageText(j, parts);
    } else if (e.name === 'gen_ai.choice') {
      const j = jsonAttr(ea.message);
      if (j !== undefined && ea.message !== undefined) messageText(j, parts);
      else if (typeof ea.content === 'string') parts.push(ea.content);
    }
  }
  if (parts.length) return joined(parts);
  const out = jsonAttr(a['output.value']);
  if (out !== undefined && a['output.value'] !== undefined) messageText(out, parts);
  return joined(parts);
}

/** The documents a span retrieved: `[{id, text, score}]` (both dialects of the docs). */
export function spanDocuments(span) {
  const a = span.attributes || {};
  const out = [];
  const list = jsonAttr(a[DOCUMENTS_KEY]);
  if (Array.isArray(list)) {
    list.forEach((d, i) => {
      if (!d || typeof d !== 'object') return;
      const text = typeof d.text === 'string' ? d.text : typeof d.content === 'string' ? d.content : null;
      if (text === null) return;
      const id = typeof d.id === 'string' || typeof d.id === 'number' ? String(d.id) : String(i);
      out.push({ id, text, score: Number.isFinite(d.score) ? d.score : null });
    });
  }
  for (let i = 0; ; i += 1) {
    const p = `retrieval.documents.${i}.document.`;
    const text = a[`${p}content`];
    if (typeof text !== 'string') break;
    const score = Number(a[`${p}score`]);
    out.push({ id: String(a[`${p}id`] ?? i), text, score: Number.isFinite(score) ? score : null });
  }
  return out;
}

/**
 * The evaluation for `span` among the trace's `spans`: `{evaluation, target}` where `target`
 * is the answer's span (`span` itself, or the span an evaluation span scores), or null.
 */
export function findEvaluation(span, spans) {
  if (span.name !== EVALUATION_SPAN && (span.attributes || {})[`${PREFIX}evidence`] !== undefined) {
    return { evaluation: span, target: span };
  }
  if (span.name === EVALUATION_SPAN) {
    const tid = (span.attributes || {})[`${PREFIX}target_span_id`] || span.parent_span_id;
    const target = spans.find((s) => s.span_id === tid);
    return target ? { evaluation: span, target } : null;
  }
  const evaluation = spans.find((s) => s.name === EVALUATION_SPAN &&
    ((s.attributes || {})[`${PREFIX}target_span_id`] === span.span_id ||
     (!(s.attributes || {})[`${PREFIX}target_span_id`] && s.parent_span_id === span.span_id)));
  return evaluation ? { evaluation, target: span } : null;
}

/** Per-sentence evidence normalised: `[{start, end, supported, best}]` (best: null or passage). */
export function evidenceOf(evaluation) {
  const list = jsonAttr((evaluation.attributes || {})[`${PREFIX}evidence`]);
  if (!Array.isArray(list)) return null;
  return list.map((s) => ({
    start: Number(s.start_char), end: Number(s.end_char), supported: s.supported === true,
    text: typeof s.text === 'string' && s.text ? s.text : null,
    missing: Array.isArray(s.missing) ? s.missing.filter((m) => typeof m === 'string') : [],
    best: s.best && typeof s.best === 'object' ? {
      document_id: String(s.best.document_id ?? ''), kind: s.best.kind || null,
      start: Number(s.best.start_char), end: Number(s.best.end_char),
      coverage: s.best.coverage, score: s.best.score ?? null,
      text: typeof s.best.text === 'string' && s.best.text ? s.best.text : null,
    } : null,
  }));
}

/** The `grounding.sentences` of a `detect/hallucination` answer, normalised as `evidenceOf`. */
export function groundingOf(result, docs) {
  const sentences = result && result.grounding && Array.isArray(result.grounding.sentences)
    ? result.grounding.sentences : [];
  return sentences.map((s) => {
    const doc = s.best ? docs.find((d) => d.id === String(s.best.document_id)) : null;
    return {
      start: Number(s.span && s.span.start_char), end: Number(s.span && s.span.end_char),
      supported: s.supported === true, text: null,
      missing: Array.isArray(s.unsupported_units) ? s.unsupported_units.slice(0, 8) : [],
      best: s.best ? {
        document_id: String(s.best.document_id ?? ''), kind: 'document',
        start: Number(s.best.span && s.best.span.start_char), end: Number(s.best.span && s.best.span.end_char),
        coverage: s.best.coverage, score: doc ? doc.score : null, text: null,
      } : null,
    };
  });
}

/** The passage that best matches sentence `s`: stored with the evidence, else cut from the
 * document's text when the trace holds it; null when neither. */
function passageOf(s, docTexts) {
  const b = s.best;
  if (!b) return null;
  if (b.text) return b.text;
  const docText = docTexts.get(b.document_id);
  if (!docText || !Number.isFinite(b.start) || !Number.isFinite(b.end)) return null;
  const passage = Array.from(docText).slice(b.start, b.end).join('');
  return passage || null;
}

function sentenceTitle(s, passage) {
  if (!s.supported) {
    return 'Unsupported: no passage of the context supports this sentence.' +
      (s.missing.length ? `\nnot in any passage: ${s.missing.join(', ')}` : '');
  }
  const b = s.best;
  const lines = [`Supported by ${b.kind && b.kind !== 'document' ? `${b.kind} ` : 'document '}${b.document_id}`,
    `coverage ${formatNumber(b.coverage, 2)}${b.score !== null && b.score !== undefined ? ` · retriever score ${formatNumber(b.score, 3)}` : ''}`];
  if (passage) lines.push(`passage: “${passage.length > 400 ? `${passage.slice(0, 400)}…` : passage}”`);
  return lines.join('\n');
}

/**
 * The sentences as HTML (`data-testid="sentences"`): `answer` split at the evidence's
 * character offsets, each `<span data-testid="sentence" data-supported data-document>` with
 * its source beside it. `docTexts` maps document ids to their text (for the hover's passage).
 * When the offsets do not fit the answer text, each sentence is named by its offsets instead.
 */
export function sentencesHtml(answer, sentences, docTexts = new Map()) {
  const chars = Array.from(answer || '');
  const fits = sentences.every((s) => Number.isFinite(s.start) && Number.isFinite(s.end) &&
    s.start >= 0 && s.end <= chars.length && s.start <= s.end);
  const out = [];
  let at = 0;
  sentences.forEach((s, i) => {
    if (fits && s.start > at) out.push(escapeHtml(chars.slice(at, s.start).join('')));
    const text = fits ? chars.slice(s.start, s.end).join('')
      : s.text || `sentence ${i + 1} (characters ${s.start}–${s.end})`;
    const doc = s.supported && s.best ? s.best.document_id : '';
    out.push(`<span class="sent ${s.supported ? 'sup' : 'unsup'}${fits ? '' : ' no-text'}" data-testid="sentence"`,
      ` data-supported="${s.supported}" data-index="${i}"`,
      doc ? ` data-document="${escapeHtml(doc)}"` : '',
      ` title="${escapeHtml(sentenceTitle(s, passageOf(s, docTexts)))}">${escapeHtml(text)}</span>`,
      s.supported && s.best
        ? `<span class="ev-ref" data-testid="sentence-source">${escapeHtml(doc)}${
          s.best.score !== null && s.best.score !== undefined ? ` · ${escapeHtml(formatNumber(s.best.score, 2))}` : ''}</span>`
        : '<span class="ev-ref unsup" data-testid="sentence-source">unsupported</span>',
      fits ? '' : ' ');
    if (fits) at = Math.max(at, s.end);
  });
  if (fits && at < chars.length) out.push(escapeHtml(chars.slice(at).join('')));
  const note = fits || sentences.every((s) => s.text) ? '' : '<div class="muted ev-note" data-testid="evidence-no-text">' +
    'The answer text on this span does not match the evaluation (it may have come in a log record): ' +
    'sentences without stored text are named by their character offsets.</div>';
  return `${note}<div class="ev-answer${fits ? '' : ' ev-offsets'}">${out.join('')}</div>`;
}

/**
 * One item per sentence (`data-testid="sentence-support"`): the sentence (`.ev-s-text`), and
 * the retrieved chunk that supports it quoted (`data-testid="support-passage"`), or for an
 * unsupported one the words and numbers no passage has.
 */
function supportHtml(answer, sentences, docTexts) {
  if (!sentences.length) return '';
  const chars = Array.from(answer || '');
  const items = sentences.map((s, i) => {
    const own = Number.isFinite(s.start) && Number.isFinite(s.end) && s.start >= 0 && s.end <= chars.length
      ? chars.slice(s.start, s.end).join('') : '';
    const text = (s.text || own || `characters ${s.start}–${s.end}`).trim();
    const head = `<div class="ev-s-text">${escapeHtml(text)}</div>`;
    if (!s.supported || !s.best) {
      const missing = s.missing.length
        ? `; not in any passage: <span class="mono">${escapeHtml(s.missing.join(', '))}</span>` : '';
      return `<li data-testid="sentence-support" data-index="${i}" data-supported="false">${head}` +
        `<div class="ev-s-src"><span class="ev-bad">unsupported</span>: no passage of the context supports it${missing}</div></li>`;
    }
    const b = s.best;
    const passage = passageOf(s, docTexts);
    const facts = [b.kind && b.kind !== 'document' ? b.kind.replace('_', ' ') : null,
      `coverage ${formatNumber(b.coverage, 2)}`,
      b.score !== null && b.score !== undefined ? `retriever score ${formatNumber(b.score, 3)}` : null].filter(Boolean);
    return `<li data-testid="sentence-support" data-index="${i}" data-supported="true" data-document="${escapeHtml(b.document_id)}">` +
      `${head}<div class="ev-s-src">supported by <span class="mono">${escapeHtml(b.document_id)}</span> ` +
      `<span class="muted">${escapeHtml(facts.join(' · '))}</span></div>` +
      `<blockquote class="ev-passage" data-testid="support-passage">${passage ? escapeHtml(passage) : '<span class="muted">passage text not stored</span>'}</blockquote></li>`;
  });
  return `<ol class="ev-support" data-testid="sentence-supports">${items.join('')}</ol>`;
}

function documentsHtml(rows) {
  if (!rows.length) return '';
  return '<table class="kv ev-docs" data-testid="evidence-documents"><thead><tr><th>document</th>' +
    '<th>retriever score</th><th>supports</th></tr></thead><tbody>' +
    rows.map((r) => `<tr data-document="${escapeHtml(r.id)}"><td class="mono">${escapeHtml(r.id)}</td>` +
      `<td>${escapeHtml(r.score === null || r.score === undefined ? '-' : formatNumber(r.score, 3))}</td>` +
      `<td>${r.count ? `${r.count} sentence${r.count > 1 ? 's' : ''}` : '<span class="muted">nothing</span>'}</td></tr>`).join('') +
    '</tbody></table>';
}

function blockHtml({ answer, sentences, docTexts, docs, index, label, explanation, source }) {
  const unsupported = sentences.filter((s) => !s.supported).length;
  const counts = new Map();
  for (const s of sentences) {
    if (s.supported && s.best) counts.set(s.best.document_id, (counts.get(s.best.document_id) || 0) + 1);
  }
  const facts = [
    index !== null && index !== undefined ? `hallucination index ${escapeHtml(formatNumber(index, 3))}${label ? ` (${escapeHtml(label)})` : ''}` : '',
    `${sentences.length - unsupported} of ${sentences.length} sentence${sentences.length === 1 ? '' : 's'} supported`,
    unsupported ? `<strong class="ev-bad">${unsupported} unsupported</strong>` : '',
  ].filter(Boolean);
  return `<div class="evidence" data-testid="sentences" data-source="${source}" data-unsupported="${unsupported}">` +
    `<div class="ev-summary" data-testid="evidence-summary">${facts.join(' · ')}</div>` +
    (explanation ? `<div class="muted ev-expl">${escapeHtml(explanation)}</div>` : '') +
    `<div class="ev-legend"><span class="sent sup">supported</span> by the document named beside it ` +
    '<span class="sent unsup">unsupported</span> by every passage of the context · hover a sentence for its passage</div>' +
    sentencesHtml(answer, sentences, docTexts) +
    supportHtml(answer, sentences, docTexts) +
    documentsHtml(docs.map((d) => ({ ...d, count: counts.get(d.id) || 0 }))) +
    (source === 'computed' ? '<div class="muted ev-note">This span was stored without its evidence; sentences recomputed now with <code>POST api/v1/detect/hallucination</code> from its answer and documents.</div>' : '') +
    '</div>';
}

/** Documents of the evaluation's retrievals: `[{id, score}]` in context order. */
function evaluationDocuments(evaluation) {
  const a = evaluation.attributes || {};
  const retrievals = jsonAttr(a[`${PREFIX}retrievals`]);
  const out = [];
  if (Array.isArray(retrievals)) {
    for (const r of retrievals) {
      for (const d of Array.isArray(r && r.documents) ? r.documents : []) {
        if (!out.some((o) => o.id === String(d.id))) out.push({ id: String(d.id), score: d.score ?? null });
      }
    }
  }
  const ctx = jsonAttr(a[`${PREFIX}context`]) ?? a[`${PREFIX}context`];
  for (const id of Array.isArray(ctx) ? ctx : []) {
    if (!out.some((o) => o.id === String(id))) out.push({ id: String(id), score: null });
  }
  return out;
}

/**
 * Fills `slot` with the sentences of the answer `span` (or of the answer an evaluation span
 * scores). `ctx`: `{spans, signal}`. Nothing is shown for spans without an answer.
 */
export async function loadEvidence(slot, span, ctx) {
  const spans = Array.isArray(ctx.spans) ? ctx.spans : [];
  const found = findEvaluation(span, spans);
  const target = found ? found.target : span;
  const answer = answerText(target);
  const docTexts = new Map();
  for (const s of spans) for (const d of spanDocuments(s)) if (!docTexts.has(d.id)) docTexts.set(d.id, d.text);
  const title = '<h3>Answer, sentence by sentence</h3>';
  if (found) {
    const sentences = evidenceOf(found.evaluation);
    const a = found.evaluation.attributes || {};
    if (!sentences) {
      slot.innerHTML = `${title}<div class="state error" data-testid="evidence-error">The evaluation span ` +
        `has no readable <code>${PREFIX}evidence</code> attribute.</div>`;
      return;
    }
    slot.innerHTML = title + blockHtml({
      answer, sentences, docTexts, docs: evaluationDocuments(found.evaluation),
      index: found.evaluation.quality && found.evaluation.quality.hallucination_index,
      label: a[`${PREFIX}label`], explanation: a[`${PREFIX}explanation`], source: 'evaluation',
    });
    return;
  }
  const docs = spanDocuments(span);
  if (!answer) return;
  if (!docs.length) {
    slot.innerHTML = `${title}<div class="state empty" data-testid="evidence-none">No evaluation of this ` +
      `answer: Sightline writes a <code>${EVALUATION_SPAN}</code> span under an answer once its trace has ` +
      'been quiet for 2 s, and only when the context before it holds a retrieved document or a tool ' +
      'result (docs/llm-instrumentation.md, “the context”).</div>';
    return;
  }
  slot.innerHTML = `${title}<div class="state loading" data-testid="evidence-loading">Scoring the answer's sentences against its documents…</div>`;
  const body = { answer, documents: docs.map((d) => ({ id: d.id, text: d.text })) };
  const lp = jsonAttr((span.attributes || {})['gen_ai.response.logprobs']);
  if (lp && typeof lp === 'object' && Array.isArray(lp.content)) body.logprobs = lp;
  try {
    const result = await apiPost('api/v1/detect/hallucination', body, { signal: ctx.signal });
    if (ctx.signal && ctx.signal.aborted) return;
    const ev = result && result.evaluation ? result.evaluation : {};
    slot.innerHTML = title + blockHtml({
      answer, sentences: groundingOf(result, docs), docTexts, docs,
      index: span.quality && span.quality.hallucination_index !== null && span.quality.hallucination_index !== undefined
        ? span.quality.hallucination_index : ev['gen_ai.evaluation.score.value'],
      label: ev['gen_ai.evaluation.score.label'], explanation: ev['gen_ai.evaluation.explanation'],
      source: 'computed',
    });
  } catch (e) {
    if (isAbort(e)) return;
    slot.innerHTML = `${title}<div class="state error" data-testid="evidence-error" role="alert">` +
      `Scoring the answer's sentences failed: ${escapeHtml(e.message)}</div>`;
  }
}
