/**
 * Shapes of Sightline's answers, as the plugin reads them.
 *
 * Only the fields the frame mapping uses are typed; everything else passes through untouched.
 * Native APIs wrap answers as `{"status": "success", "data": ...}`; `unwrap` accepts both forms.
 */

/** `{"status": "success", "data": X}` -> X; an unwrapped answer is returned as is. */
export function unwrap<T>(body: unknown): T {
  if (body && typeof body === 'object' && 'status' in body && 'data' in body) {
    return (body as { data: T }).data;
  }
  return body as T;
}

/** The message of a `{"status": "error", "error": "..."}` answer (or of any error body). */
export function errorMessage(body: unknown): string | undefined {
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    for (const k of ['error', 'message']) {
      if (typeof b[k] === 'string') {
        return b[k] as string;
      }
    }
  }
  return typeof body === 'string' && body ? body : undefined;
}

/** `GET /api/v1/quality`. */
export interface QualityResponse {
  metric: string;
  by: string;
  step_ms: number;
  series: Array<{ group: string; points: Array<[number, number | null]> }>;
}

/** One series of a Prometheus matrix. */
export interface PromMatrixSeries {
  metric: Record<string, string>;
  values: Array<[number, string]>;
}

/** `GET /api/v1/query_range` `data`. */
export interface PromMatrix {
  resultType: 'matrix';
  result: PromMatrixSeries[];
}

/** A detector as `GET /api/v1/detectors[/{name}]` describes it. */
export interface Detector {
  name: string;
  query: string;
  step?: string;
  status?: { state: string; error?: string | null; fallback?: string | null };
}

/** `GET /api/v1/annotations`: Grafana's annotation shape (ms). */
export interface AnnotationEvent {
  time: number;
  timeEnd?: number | null;
  title: string;
  text: string;
  tags: string[];
}

/** `GET /api/v1/anomalies`. */
export interface Anomaly {
  id: string;
  detector: string;
  labels: Record<string, string>;
  start_ms: number;
  end_ms: number | null;
  severity: number;
  level: 'low' | 'medium' | 'high';
  direction: 'above' | 'below';
  peak_score: number;
  explanation: string;
}

/** F test of one Granger lag (statsmodels names). */
export interface FTest {
  F: number;
  p: number;
  df_denom: number;
  df_num: number;
}

/** `POST /api/v1/detect/granger` (not wrapped). */
export interface GrangerResponse {
  lags: Array<{ lag: number; ssr_ftest: FTest; partial_r2?: number }>;
  selected_lag: { aic: number; bic: number };
  differenced: number;
  nobs: number;
}

/** One matched span of a trace search result. */
export interface SearchSpan {
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  service_name: string;
  name: string;
  kind: string;
  start_unix_nano: number;
  duration_nano: number;
  status: string;
  model?: string | null;
  provider?: string | null;
  operation?: string | null;
  input_tokens?: number | null;
  output_tokens?: number | null;
}

/** `GET /api/v1/traces/search` `data`. */
export interface TraceSearchResponse {
  traces: Array<{
    trace_id: string;
    root_service_name: string | null;
    root_span_name: string | null;
    start_unix_nano: number;
    duration_nano: number;
    span_count: number;
    matched: number;
    spans: SearchSpan[];
  }>;
  total_traces: number;
  total_spans: number;
}

/** One span of `GET /api/v1/traces/{id}`. */
export interface TraceSpan {
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  name: string;
  service_name: string;
  kind: string;
  start_unix_nano: number;
  end_unix_nano: number;
  duration_nano: number;
  status: { code: string; message: string };
  scope?: { name: string; version: string };
  gen_ai?: Record<string, unknown>;
  quality?: Record<string, number | null>;
  resource_attributes: Record<string, unknown>;
  attributes: Record<string, unknown>;
  trace_state?: string;
  events: Array<{ time_unix_nano: number; name: string; attributes: Record<string, unknown> }>;
  links?: Array<{ trace_id: string; span_id: string; trace_state?: string; attributes: Record<string, unknown> }>;
}

/** `GET /api/v1/traces/{id}` `data`. */
export interface TraceResponse {
  trace_id: string;
  root: string | null;
  critical_path: Array<{ span_id: string; start_unix_nano: number; end_unix_nano: number }>;
  spans: TraceSpan[];
}

/** `GET /api/v1/quality/tokens`. */
export interface TokensResponse {
  trace_id: string;
  span_id: string;
  model: string | null;
  entropy_mean: number | null;
  hallucination_index: number | null;
  tokens: Array<{
    token: string;
    logprob: number;
    entropy: number | null;
    top: Array<{ token: string; logprob: number }>;
  }>;
}
