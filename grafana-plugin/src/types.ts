/**
 * Query, options and secure-settings models of the Sightline datasource.
 *
 * One `SightlineQuery` carries the fields of every query type; each type reads only its own.
 */
import { DataQuery, DataSourceJsonData } from '@grafana/schema';

/** What a query asks Sightline for. */
export enum QueryType {
  /** LLM quality metric over time, one series per group (`/api/v1/quality`). */
  Quality = 'quality',
  /** A detector's series with predicted/lower/upper bands (`/api/v1/query_range`). */
  Anomalies = 'anomalies',
  /** Anomaly events of a detector, as annotations (`/api/v1/annotations`). */
  AnomalyEvents = 'anomalyEvents',
  /** Granger causality between PromQL series: edges table and node graph. */
  Granger = 'granger',
  /** GenAI trace search (`/api/v1/traces/search`). */
  TraceSearch = 'traceSearch',
  /** One trace for Grafana's trace view (`/api/v1/traces/{id}`). */
  Trace = 'trace',
  /** Token-level view of one LLM response (`/api/v1/quality/tokens`). */
  Tokens = 'tokens',
}

/** Metrics served by `/api/v1/quality`. */
export const QUALITY_METRICS = [
  'token_entropy_mean',
  'hallucination_index',
  'low_confidence_tokens',
  'context_expansion',
  'cache_hit_ratio',
] as const;
export type QualityMetric = (typeof QUALITY_METRICS)[number];

/** Fixed grouping keys of `/api/v1/quality` (plus `attr.<key>`). */
export const QUALITY_GROUPS = ['model', 'provider', 'operation', 'service', 'route'] as const;

export interface SightlineQuery extends DataQuery {
  queryType?: QueryType;
  // quality
  metric?: QualityMetric;
  /** `model`, `provider`, `operation`, `service`, `route` or `attr.<key>`. */
  by?: string;
  service?: string;
  model?: string;
  provider?: string;
  /** Step as a duration (`1m`); empty means the panel interval. */
  step?: string;
  // anomalies / anomaly events
  detector?: string;
  // granger
  /** PromQL queries giving one series each; every cause is tested against every effect. */
  causes?: string[];
  effects?: string[];
  maxLag?: number;
  // trace search
  operation?: string;
  status?: '' | 'ok' | 'error' | 'unset';
  minDuration?: string;
  minHallucination?: number;
  minEntropyMean?: number;
  /** Extra `key=value` (or `!=`, `=~`, `!~`) attribute filters. */
  attrs?: string[];
  /** A TraceQL filter ANDed with the rest. */
  traceql?: string;
  limit?: number;
  // trace / tokens
  traceId?: string;
  spanId?: string;
}

export const DEFAULT_QUERY: Partial<SightlineQuery> = {
  queryType: QueryType.Quality,
  metric: 'hallucination_index',
  by: 'model',
};

/** Non-secret datasource settings (`jsonData`). */
export interface SightlineOptions extends DataSourceJsonData {
  /** Tenant sent as `X-Scope-OrgID` when Sightline runs with auth off; empty means the default tenant. */
  tenant?: string;
}

/** Secret settings, only ever read by Grafana's datasource proxy. */
export interface SightlineSecureJsonData {
  /** Bearer token (when Sightline runs with `--auth-tokens-file`). */
  token?: string;
}
