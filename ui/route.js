// The URL fragment is the whole state of the UI: `#/<path>?<query>`, e.g.
// `#/traces?model=gpt-4o&since=1h&tenant=acme` or `#/trace/<32 hex>?span=<16 hex>`.
// This module parses and builds such fragments and resolves the shared time range.

/** Query keys kept when moving between views (tenant and time range). */
export const GLOBAL_KEYS = ['tenant', 'since', 'start', 'end'];

/** The time ranges of the picker, `since=<key>` in the URL. */
export const RANGES = [
  { key: '15m', label: 'Last 15 minutes', secs: 15 * 60 },
  { key: '1h', label: 'Last 1 hour', secs: 3600 },
  { key: '6h', label: 'Last 6 hours', secs: 6 * 3600 },
  { key: '24h', label: 'Last 24 hours', secs: 24 * 3600 },
  { key: '7d', label: 'Last 7 days', secs: 7 * 24 * 3600 },
];

/** The range used when the URL names none. */
export const DEFAULT_SINCE = '1h';

/** `#/trace/abc?span=1` -> {path: '/trace/abc', segments: ['trace', 'abc'], params}. */
export function parseHash(hash) {
  let h = hash || '';
  if (h.startsWith('#')) h = h.slice(1);
  const q = h.indexOf('?');
  let path = q >= 0 ? h.slice(0, q) : h;
  const query = q >= 0 ? h.slice(q + 1) : '';
  if (!path.startsWith('/')) path = `/${path}`;
  const segments = path.split('/').filter(Boolean).map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  });
  return { path, segments, params: new URLSearchParams(query) };
}

/** The fragment for `path` and `params` (URLSearchParams or a plain object, arrays repeat). */
export function buildHash(path, params) {
  const q = toParams(params);
  const s = q.toString();
  return `#${path.startsWith('/') ? path : `/${path}`}${s ? `?${s}` : ''}`;
}

/** URLSearchParams from URLSearchParams or an object; empty values left out. */
export function toParams(params) {
  if (params instanceof URLSearchParams) {
    const out = new URLSearchParams();
    for (const [k, v] of params) if (v !== '') out.append(k, v);
    return out;
  }
  const out = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    for (const one of Array.isArray(v) ? v : [v]) {
      if (one === null || one === undefined || one === '') continue;
      out.append(k, String(one));
    }
  }
  return out;
}

/** The route of the current location. */
export function currentRoute() {
  return parseHash(window.location.hash);
}

/** Only the shared keys (tenant, time range) of `params`. */
export function globalParams(params) {
  const out = new URLSearchParams();
  for (const k of GLOBAL_KEYS) {
    for (const v of params.getAll(k)) if (v !== '') out.append(k, v);
  }
  return out;
}

/**
 * The fragment for `path` keeping the current tenant and time range, plus `extra` (an object;
 * a null value removes that key).
 */
export function link(path, extra = {}) {
  const p = globalParams(currentRoute().params);
  for (const [k, v] of Object.entries(extra)) {
    p.delete(k);
    if (v === null || v === undefined || v === '') continue;
    for (const one of Array.isArray(v) ? v : [v]) p.append(k, String(one));
  }
  return buildHash(path, p);
}

/**
 * Goes to `path` with `params`. `replace: true` rewrites the current history entry and, with
 * `silent: true`, does so without a hashchange event (for state a view already shows, such as
 * the selected span).
 */
export function navigate(path, params, opts = {}) {
  const hash = buildHash(path, params);
  if (hash === window.location.hash) return;
  if (opts.replace) {
    const url = `${window.location.pathname}${window.location.search}${hash}`;
    window.history.replaceState(null, '', url);
    if (!opts.silent) window.dispatchEvent(new HashChangeEvent('hashchange'));
  } else {
    window.location.hash = hash;
  }
}

/** Sets (or with null removes) query keys of the current route, keeping the rest. */
export function updateParams(changes, opts = {}) {
  const r = currentRoute();
  const p = new URLSearchParams(r.params);
  for (const [k, v] of Object.entries(changes)) {
    p.delete(k);
    if (v === null || v === undefined || v === '') continue;
    for (const one of Array.isArray(v) ? v : [v]) p.append(k, String(one));
  }
  navigate(r.path, p, opts);
}

function parseSeconds(v) {
  if (v === null || v === undefined || v === '') return NaN;
  const n = Number(v);
  return Number.isFinite(n) ? n : NaN;
}

/**
 * The time range of `params` as unix seconds: `{start, end, since, custom, label}`.
 * `start`/`end` win over `since` (a custom range; `end` defaults to now); otherwise `since`
 * (one of RANGES' keys, default 1h) before `now` (unix seconds).
 */
export function timeRange(params, now = Date.now() / 1000) {
  const start = parseSeconds(params.get('start'));
  const end = parseSeconds(params.get('end'));
  if (Number.isFinite(start) || Number.isFinite(end)) {
    const e = Number.isFinite(end) ? end : Math.floor(now);
    const s = Number.isFinite(start) ? start : e - 3600;
    return { start: s, end: e, since: null, custom: true, label: 'Custom range' };
  }
  const key = params.get('since') || DEFAULT_SINCE;
  const range = RANGES.find((r) => r.key === key) || RANGES.find((r) => r.key === DEFAULT_SINCE);
  const e = Math.floor(now);
  return { start: e - range.secs, end: e, since: range.key, custom: false, label: range.label };
}
