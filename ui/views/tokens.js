// An LLM answer token by token, coloured by the entropy of the model's distribution at each
// position (`GET api/v1/quality/tokens`, docs/quality.md). Fixed scale, the same for every
// span and model so colours compare across answers:
//   0 nats -> transparent (no colour), rising linearly to strong red at >= 2 nats
//   (background rgba(220, 38, 38, 0.9 * min(entropy / 2, 1))); tokens without alternatives
//   (entropy null) are left uncoloured with a dotted underline.

import { escapeHtml, formatNumber, formatPercent } from '../format.js';

/** Entropy (nats) at which the colour is strongest. */
export const ENTROPY_MAX = 2;
const RED = '220, 38, 38';
const MAX_ALPHA = 0.9;

/** The opacity of the red for `entropy` (nats): 0 at 0, 0.9 at >= ENTROPY_MAX. */
export function entropyAlpha(entropy) {
  if (entropy === null || entropy === undefined) return 0;
  const e = Number(entropy);
  if (!Number.isFinite(e) || e <= 0) return 0;
  return MAX_ALPHA * Math.min(e / ENTROPY_MAX, 1);
}

/** The CSS background for `entropy`: `transparent` or `rgba(220, 38, 38, <alpha>)`. */
export function entropyColor(entropy) {
  const a = entropyAlpha(entropy);
  return a === 0 ? 'transparent' : `rgba(${RED}, ${Number(a.toFixed(3))})`;
}

function quoted(token) {
  return JSON.stringify(String(token ?? ''));
}

/** The tooltip of one token: its probability, entropy and the alternatives. */
export function tokenTitle(t) {
  const lines = [];
  const lp = Number(t.logprob);
  lines.push(`${quoted(t.token)}  p ${Number.isFinite(lp) ? formatPercent(Math.exp(lp)) : '-'}` +
    ` (logprob ${formatNumber(t.logprob, 4)})`);
  lines.push(t.entropy === null || t.entropy === undefined
    ? 'entropy: unknown (no alternatives recorded)'
    : `entropy ${formatNumber(t.entropy, 3)} nats`);
  const top = Array.isArray(t.top) ? t.top : [];
  if (top.length) {
    lines.push('alternatives:');
    for (const alt of top) {
      const alp = Number(alt.logprob);
      lines.push(`  ${quoted(alt.token)}  ${Number.isFinite(alp) ? formatPercent(Math.exp(alp)) : '-'}` +
        ` (logprob ${formatNumber(alt.logprob, 4)})`);
    }
  }
  return lines.join('\n');
}

/** The tokens as `<span class="tok" data-testid="token" data-entropy style title>` (one string). */
export function tokensHtml(tokens) {
  const out = [];
  for (const t of Array.isArray(tokens) ? tokens : []) {
    const known = t.entropy !== null && t.entropy !== undefined && Number.isFinite(Number(t.entropy));
    const a = entropyAlpha(t.entropy);
    const cls = `tok${known ? '' : ' tok-na'}${a >= 0.55 ? ' tok-hot' : ''}`;
    out.push(`<span class="${cls}" data-testid="token" data-entropy="${known ? Number(t.entropy) : ''}"`,
      ` style="background: ${entropyColor(t.entropy)}" title="${escapeHtml(tokenTitle(t))}">`,
      `${escapeHtml(t.token)}</span>`);
  }
  return out.join('');
}

/** The legend of the colour scale (`data-testid="tokens-legend"`). */
export function legendHtml() {
  const stops = [0, 0.5, 1, 1.5, 2].map((e) =>
    `<span class="tl-stop" style="background: ${entropyColor(e)}">${e === 2 ? '≥ 2' : e}</span>`);
  return `<div class="tokens-legend" data-testid="tokens-legend">` +
    `<span>Token entropy (nats):</span>${stops.join('')}` +
    '<span class="tok tok-na">no alternatives</span>' +
    '<span class="muted">Hover a token for its probability and the alternatives.</span></div>';
}

/**
 * The whole block for a `quality/tokens` answer: summary line, legend and the coloured
 * tokens (`data-testid="tokens"`).
 */
export function tokensBlockHtml(data) {
  const tokens = Array.isArray(data && data.tokens) ? data.tokens : [];
  let maxTok = null;
  for (const t of tokens) {
    if (t.entropy !== null && t.entropy !== undefined &&
        (maxTok === null || Number(t.entropy) > Number(maxTok.entropy))) maxTok = t;
  }
  const facts = [
    `${tokens.length} tokens`,
    data && data.model ? `model ${escapeHtml(data.model)}` : '',
    `mean entropy ${escapeHtml(formatNumber(data && data.entropy_mean, 3))} nats`,
    `hallucination index ${escapeHtml(formatNumber(data && data.hallucination_index, 3))}`,
    maxTok ? `most uncertain ${escapeHtml(quoted(maxTok.token))} (${escapeHtml(formatNumber(maxTok.entropy, 2))} nats)` : '',
  ].filter(Boolean);
  return `<div class="tokens-facts" data-testid="tokens-summary">${facts.join(' · ')}</div>` +
    legendHtml() +
    `<div class="tokens" data-testid="tokens">${tokensHtml(tokens)}</div>`;
}
