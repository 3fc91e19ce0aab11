/**
 * Request builders: from a query and a time range to the HTTP request Sightline expects.
 *
 * Pure functions with no Grafana runtime dependency, so the unit tests, the datasource and the
 * contract test (which sends them to a real `sightline serve`) all use the same code.
 */
import { QUALITY_GROUPS, QUALITY_METRICS, QualityMetric, SightlineQuery } from '../types';

/** Query-string values; arrays repeat the key. */
export type Params = Record<string, string | number | string[]>;

export interface ApiRequest {
  method: 'GET' | 'POST';
  /** Path under the Sightline base URL, starting with `/`. */
  path: string;
  params?: Params;
  data?: unknown;
}

/** A time range in unix milliseconds. */
export interface RangeMs {
  fromMs: number;
  toMs: number;
}

/**
 * `start`/`end` for Sightline's native endpoints: whole unix seconds, widened to cover the range.
 * Seconds are what the trace and Granger APIs take, and what the server's shared timestamp
 * parser reads from integers of 10 digits or fewer (longer integers would be nanoseconds).
 */
export function rangeSeconds(range: RangeMs): { start: number; end: number } {
  return { start: Math.floor(range.fromMs / 1000), end: Math.ceil(range.toMs / 1000) };
}

/** A step as a Prometheus duration in whole seconds (`60s`), as the detector specs write it. */
export function stepDuration(ms: number): string {
  return `${Math.max(1, Math.round(ms / 1000))}s`;
}

/** Shortest step Sightline is asked for (a panel interval can be smaller). */
const MIN_STEP_MS = 1_000;

/** Thrown for a query that cannot be sent (missing detector, bad trace id, ...). */
export class QueryError extends Error {}

const HEX_32 = /^[0-9a-f]{1,32}$/i;
const HEX_16 = /^[0-9a-f]{16}$/i;
const DURATION = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h|d))+$/;

/** Parses `30s`, `1m`, `1h30m`, `2d` (or plain milliseconds) into milliseconds. */
export function durationMs(text: string): number {
  const t = text.trim();
  if (/^\d+$/.test(t)) {
    return Number(t);
  }
  if (!DURATION.test(t)) {
    throw new QueryError(`invalid duration "${text}" (use e.g. 30s, 1m, 1h)`);
  }
  const unit: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1e3, m: 60e3, h: 3600e3, d: 86400e3 };
  let total = 0;
  for (const m of t.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d)/g)) {
    total += Number(m[1]) * unit[m[2]];
  }
  return total;
}

/** The step of a query in ms: its own `step`, else the panel interval, never under 1 s. */
export function stepMs(q: SightlineQuery, intervalMs: number | undefined): number {
  const ms = q.step ? durationMs(q.step) : (intervalMs ?? 60_000);
  return Math.max(MIN_STEP_MS, Math.round(ms));
}

/** `GET /api/v1/quality`: a quality metric grouped over time. */
export function qualityRequest(q: SightlineQuery, range: RangeMs, intervalMs?: number): ApiRequest {
  const metric: QualityMetric = q.metric ?? 'hallucination_index';
  if (!(QUALITY_METRICS as readonly string[]).includes(metric)) {
    throw new QueryError(`unknown quality metric "${metric}"; use one of ${QUALITY_METRICS.join(', ')}`);
  }
  const by = q.by?.trim() || 'model';
  if (!(QUALITY_GROUPS as readonly string[]).includes(by) && !/^attr\.[A-Za-z0-9_.\-]+$/.test(by)) {
    throw new QueryError(`cannot group by "${by}"; use ${QUALITY_GROUPS.join(', ')} or attr.<key>`);
  }
  const params: Params = {
    metric,
    by,
    ...rangeSeconds(range),
    step: stepDuration(stepMs(q, intervalMs)),
  };
  for (const key of ['service', 'model', 'provider'] as const) {
    const v = q[key]?.trim();
    if (v) {
      params[key] = v;
    }
  }
  return { method: 'GET', path: '/api/v1/quality', params };
}

/** PromQL selecting a detector's written series: predicted, lower, upper, anomalous, likelihood. */
export function detectorSeriesSelector(detector: string): string {
  // Names are checked to be [a-zA-Z_][a-zA-Z0-9_]* (requireDetector): nothing to escape.
  return `{__name__=~"${detector}:(predicted|lower|upper|anomalous|likelihood)"}`;
}

/** Prometheus range query (seconds, as Prometheus takes them). */
export function rangeQueryRequest(expr: string, range: RangeMs, step: number): ApiRequest {
  return {
    method: 'GET',
    path: '/api/v1/query_range',
    params: { query: expr, start: range.fromMs / 1000, end: range.toMs / 1000, step: step / 1000 },
  };
}

/** The band series of a detector (`<name>:predicted|:lower|:upper|:anomalous|:likelihood`). */
export function anomalyBandRequest(q: SightlineQuery, range: RangeMs, intervalMs?: number): ApiRequest {
  return rangeQueryRequest(detectorSeriesSelector(requireDetector(q)), range, stepMs(q, intervalMs));
}

/** `GET /api/v1/detectors/{name}`: the detector's spec (its source query). */
export function detectorRequest(name: string): ApiRequest {
  return { method: 'GET', path: `/api/v1/detectors/${encodeURIComponent(name)}` };
}

/** `GET /api/v1/detectors`: every detector with its status. */
export function detectorsRequest(): ApiRequest {
  return { method: 'GET', path: '/api/v1/detectors' };
}

/** `GET /api/v1/annotations`: anomaly events, Grafana annotation shape. */
export function annotationsRequest(q: SightlineQuery, range: RangeMs): ApiRequest {
  const params: Params = { ...rangeSeconds(range) };
  if (q.detector?.trim()) {
    params.detector = q.detector.trim();
  }
  return { method: 'GET', path: '/api/v1/annotations', params };
}

/** `GET /api/v1/anomalies`: anomaly events with severity and explanation. */
export function anomaliesRequest(q: SightlineQuery, range: RangeMs, limit = 500): ApiRequest {
  const params: Params = { ...rangeSeconds(range), limit };
  if (q.detector?.trim()) {
    params.detector = q.detector.trim();
  }
  return { method: 'GET', path: '/api/v1/anomalies', params };
}

function requireDetector(q: SightlineQuery): string {
  const d = q.detector?.trim();
  if (!d) {
    throw new QueryError('choose a detector');
  }
  if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(d)) {
    throw new QueryError(`detector name "${d}" is not a valid metric name prefix`);
  }
  return d;
}

/** One Granger test between two PromQL series. */
export interface GrangerPair {
  cause: string;
  effect: string;
  request: ApiRequest;
}

/** Most cause x effect pairs one query may test (each pair is one server call). */
export const MAX_GRANGER_PAIRS = 25;

/** `POST /api/v1/detect/granger` for every cause x effect pair (seconds, as the API takes them). */
export function grangerRequests(q: SightlineQuery, range: RangeMs, intervalMs?: number): GrangerPair[] {
  const causes = (q.causes ?? []).map((s) => s.trim()).filter(Boolean);
  const effects = (q.effects ?? []).map((s) => s.trim()).filter(Boolean);
  if (causes.length === 0 || effects.length === 0) {
    throw new QueryError('Granger needs at least one cause and one effect query');
  }
  if (causes.length * effects.length > MAX_GRANGER_PAIRS) {
    throw new QueryError(`at most ${MAX_GRANGER_PAIRS} cause x effect pairs per query`);
  }
  const step = stepMs(q, intervalMs) / 1000;
  const maxLag = q.maxLag ?? 6;
  if (!Number.isInteger(maxLag) || maxLag < 1) {
    throw new QueryError('max lag must be a positive integer');
  }
  const pairs: GrangerPair[] = [];
  for (const cause of causes) {
    for (const effect of effects) {
      if (cause === effect) {
        continue;
      }
      pairs.push({
        cause,
        effect,
        request: {
          method: 'POST',
          path: '/api/v1/detect/granger',
          data: {
            cause_query: cause,
            effect_query: effect,
            start: Math.floor(range.fromMs / 1000),
            end: Math.floor(range.toMs / 1000),
            step,
            max_lag: maxLag,
          },
        },
      });
    }
  }
  if (pairs.length === 0) {
    throw new QueryError('every cause is also its effect: nothing to test');
  }
  return pairs;
}

/** `GET /api/v1/traces/search` with the GenAI filters of the query (times in seconds). */
export function traceSearchRequest(q: SightlineQuery, range: RangeMs): ApiRequest {
  const params: Params = {
    start: range.fromMs / 1000,
    end: range.toMs / 1000,
    limit: q.limit ?? 50,
  };
  const strings: Array<[keyof SightlineQuery, string]> = [
    ['service', 'service'],
    ['model', 'model'],
    ['provider', 'provider'],
    ['operation', 'operation'],
    ['status', 'status'],
    ['minDuration', 'min_duration'],
    ['traceql', 'q'],
  ];
  for (const [field, param] of strings) {
    const v = q[field];
    if (typeof v === 'string' && v.trim()) {
      params[param] = v.trim();
    }
  }
  if (q.minHallucination !== undefined && q.minHallucination !== null) {
    params.min_hallucination = q.minHallucination;
  }
  if (q.minEntropyMean !== undefined && q.minEntropyMean !== null) {
    params.min_entropy_mean = q.minEntropyMean;
  }
  const attrs = (q.attrs ?? []).map((a) => a.trim()).filter(Boolean);
  for (const a of attrs) {
    if (!/^[^=!~]+(=|!=|=~|!~).*$/.test(a)) {
      throw new QueryError(`attribute filter "${a}" must be key=value, key!=value, key=~re or key!~re`);
    }
  }
  if (attrs.length) {
    params.attr = attrs;
  }
  return { method: 'GET', path: '/api/v1/traces/search', params };
}

/** `GET /api/v1/traces/{id}`. */
export function traceRequest(q: SightlineQuery): ApiRequest {
  return { method: 'GET', path: `/api/v1/traces/${requireTraceId(q)}` };
}

/** `GET /api/v1/quality/tokens` for one span. */
export function tokensRequest(q: SightlineQuery): ApiRequest {
  const traceId = requireTraceId(q);
  const spanId = q.spanId?.trim() ?? '';
  if (!HEX_16.test(spanId)) {
    throw new QueryError('span id must be 16 hex digits');
  }
  return {
    method: 'GET',
    path: '/api/v1/quality/tokens',
    params: { trace_id: traceId.padStart(32, '0'), span_id: spanId.toLowerCase() },
  };
}

function requireTraceId(q: SightlineQuery): string {
  const id = q.traceId?.trim() ?? '';
  if (!HEX_32.test(id)) {
    throw new QueryError('trace id must be 1 to 32 hex digits');
  }
  return id.toLowerCase();
}

/** `GET /api/v1/quality/values` (template variables). */
export function qualityValuesRequest(field: string): ApiRequest {
  return { method: 'GET', path: '/api/v1/quality/values', params: { field } };
}

/** Tempo tag values, the fallback for variables on servers without `/api/v1/quality/values`. */
export function tagValuesRequest(tag: string): ApiRequest {
  return { method: 'GET', path: `/api/search/tag/${encodeURIComponent(tag)}/values` };
}

/** `GET /api/v1/status/buildinfo` (health check). */
export function buildInfoRequest(): ApiRequest {
  return { method: 'GET', path: '/api/v1/status/buildinfo' };
}

/** Encodes params as a query string (arrays repeat the key), as Grafana's backend_srv does. */
export function queryString(params: Params | undefined): string {
  if (!params) {
    return '';
  }
  const sp = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) {
      v.forEach((x) => sp.append(k, x));
    } else {
      sp.append(k, String(v));
    }
  }
  const s = sp.toString();
  return s ? `?${s}` : '';
}
