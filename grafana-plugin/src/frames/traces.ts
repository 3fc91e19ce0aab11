/**
 * Trace search answers -> a table with links, and one trace -> Grafana's trace frame.
 *
 * The trace frame follows the shape Grafana's trace view reads (`TraceSpanRow` in
 * `@grafana/data`): traceID, spanID, parentSpanID, operationName, serviceName, serviceTags,
 * startTime and duration in ms, logs, tags, kind, statusCode (0 unset, 1 ok, 2 error) and
 * statusMessage, with `preferredVisualisationType: 'trace'`.
 */
import { createDataFrame, DataFrame, DataLink, FieldType, TraceSpanRow } from '@grafana/data';

import { TraceResponse, TraceSearchResponse, TraceSpan } from '../api/responses';
import { QueryType, SightlineQuery } from '../types';

/** Enough of the datasource to build internal links back to it. */
export interface DatasourceRef {
  uid: string;
  name: string;
}

/**
 * Nanoseconds -> milliseconds, rounded to the microsecond: epoch nanoseconds exceed 2^53, so
 * the JSON number is already off by up to ~256 ns and a plain division shows that noise.
 */
export function nsToMs(ns: number): number {
  return Math.round(ns / 1e3) / 1e3;
}

function internalLink(ds: DatasourceRef | undefined, title: string, query: Partial<SightlineQuery>): DataLink[] {
  if (!ds) {
    return [];
  }
  return [
    {
      title,
      url: '',
      internal: { datasourceUid: ds.uid, datasourceName: ds.name, query: { refId: 'A', ...query } },
    },
  ];
}

/** One row per trace: ids link to the trace view, the first matched LLM span to its tokens. */
export function traceSearchFrame(resp: TraceSearchResponse, refId: string, ds?: DatasourceRef): DataFrame {
  const rows = resp.traces;
  const llm = rows.map((t) => t.spans.find((s) => s.model) ?? t.spans[0]);
  const sum = (pick: (s: TraceSearchResponse['traces'][number]['spans'][number]) => number | null | undefined) =>
    rows.map((t) => {
      const vs = t.spans.map(pick).filter((v): v is number => typeof v === 'number');
      return vs.length ? vs.reduce((a, b) => a + b, 0) : null;
    });
  return createDataFrame({
    refId,
    name: 'traces',
    meta: {
      preferredVisualisationType: 'table',
      custom: { totalTraces: resp.total_traces, totalSpans: resp.total_spans },
    },
    fields: [
      {
        name: 'traceID',
        type: FieldType.string,
        values: rows.map((t) => t.trace_id),
        config: {
          displayName: 'Trace ID',
          links: internalLink(ds, 'Open trace', { queryType: QueryType.Trace, traceId: '${__value.raw}' }),
        },
      },
      { name: 'start', type: FieldType.time, values: rows.map((t) => nsToMs(t.start_unix_nano)) },
      { name: 'service', type: FieldType.string, values: rows.map((t) => t.root_service_name ?? '') },
      { name: 'name', type: FieldType.string, values: rows.map((t) => t.root_span_name ?? '') },
      {
        name: 'duration',
        type: FieldType.number,
        values: rows.map((t) => nsToMs(t.duration_nano)),
        config: { unit: 'ms' },
      },
      { name: 'spans', type: FieldType.number, values: rows.map((t) => t.span_count) },
      { name: 'matched', type: FieldType.number, values: rows.map((t) => t.matched) },
      { name: 'model', type: FieldType.string, values: llm.map((s) => s?.model ?? '') },
      { name: 'provider', type: FieldType.string, values: llm.map((s) => s?.provider ?? '') },
      { name: 'input tokens', type: FieldType.number, values: sum((s) => s.input_tokens) },
      { name: 'output tokens', type: FieldType.number, values: sum((s) => s.output_tokens) },
      {
        name: 'status',
        type: FieldType.string,
        values: rows.map((t) => (t.spans.some((s) => s.status === 'error') ? 'error' : (t.spans[0]?.status ?? ''))),
      },
      {
        name: 'spanID',
        type: FieldType.string,
        values: llm.map((s) => s?.span_id ?? ''),
        config: {
          displayName: 'LLM span',
          links: internalLink(ds, 'Tokens of this response', {
            queryType: QueryType.Tokens,
            traceId: '${__data.fields.traceID}',
            spanId: '${__value.raw}',
          }),
        },
      },
    ],
  });
}

type KeyValue = { key: string; value: unknown };

function pairs(obj: Record<string, unknown> | undefined): KeyValue[] {
  return Object.entries(obj ?? {})
    .filter(([, v]) => v !== null && v !== undefined && !(Array.isArray(v) && v.length === 0))
    .map(([key, value]) => ({ key, value }));
}

/** Promoted GenAI and quality columns back under their semantic-convention names. */
function spanTags(s: TraceSpan): KeyValue[] {
  const genAi = Object.entries(s.gen_ai ?? {}).map(([k, v]) => [`gen_ai.${genAiKey(k)}`, v] as const);
  const quality = Object.entries(s.quality ?? {}).map(([k, v]) => [`sightline.quality.${k}`, v] as const);
  const promoted = pairs(Object.fromEntries([...genAi, ...quality]));
  const own = pairs(s.attributes).filter((kv) => !promoted.some((p) => p.key === kv.key));
  return [...promoted, ...own];
}

function genAiKey(k: string): string {
  const map: Record<string, string> = {
    operation_name: 'operation.name',
    provider_name: 'provider.name',
    request_model: 'request.model',
    response_model: 'response.model',
    input_tokens: 'usage.input_tokens',
    output_tokens: 'usage.output_tokens',
    total_tokens: 'usage.total_tokens',
    cache_read_input_tokens: 'usage.cache_read_input_tokens',
    temperature: 'request.temperature',
    finish_reasons: 'response.finish_reasons',
    conversation_id: 'conversation.id',
  };
  return map[k] ?? k;
}

const STATUS: Record<string, number> = { unset: 0, ok: 1, error: 2 };

/** One span as Grafana's trace view reads it (the compiler checks the shape). */
function spanRow(s: TraceSpan, critical: Set<string>): TraceSpanRow {
  return {
    traceID: s.trace_id,
    spanID: s.span_id,
    parentSpanID: s.parent_span_id ?? undefined,
    operationName: s.name,
    serviceName: s.service_name,
    serviceTags: [{ key: 'service.name', value: s.service_name }, ...pairs(s.resource_attributes)],
    startTime: nsToMs(s.start_unix_nano),
    duration: nsToMs(s.duration_nano),
    logs: s.events.map((e) => ({ timestamp: nsToMs(e.time_unix_nano), name: e.name, fields: pairs(e.attributes) })),
    references: (s.links ?? []).map((l) => ({ traceID: l.trace_id, spanID: l.span_id, tags: pairs(l.attributes) })),
    tags: [...spanTags(s), ...(critical.has(s.span_id) ? [{ key: 'sightline.critical_path', value: true }] : [])],
    kind: s.kind,
    statusCode: STATUS[s.status.code] ?? 0,
    statusMessage: s.status.message || undefined,
    instrumentationLibraryName: s.scope?.name || undefined,
    instrumentationLibraryVersion: s.scope?.version || undefined,
    traceState: s.trace_state || undefined,
  };
}

/** Field types of the trace frame, in the order Grafana's own tracing datasources use. */
const TRACE_FIELDS: Array<[keyof TraceSpanRow, FieldType]> = [
  ['traceID', FieldType.string],
  ['spanID', FieldType.string],
  ['parentSpanID', FieldType.string],
  ['operationName', FieldType.string],
  ['serviceName', FieldType.string],
  ['serviceTags', FieldType.other],
  ['startTime', FieldType.number],
  ['duration', FieldType.number],
  ['logs', FieldType.other],
  ['references', FieldType.other],
  ['tags', FieldType.other],
  ['kind', FieldType.string],
  ['statusCode', FieldType.number],
  ['statusMessage', FieldType.string],
  ['instrumentationLibraryName', FieldType.string],
  ['instrumentationLibraryVersion', FieldType.string],
  ['traceState', FieldType.string],
];

/** A trace for Grafana's trace view; spans on the critical path are tagged. */
export function traceFrame(trace: TraceResponse, refId: string): DataFrame {
  const critical = new Set(trace.critical_path.map((c) => c.span_id));
  const rows = trace.spans.map((s) => spanRow(s, critical));
  return createDataFrame({
    refId,
    name: `trace ${trace.trace_id}`,
    meta: { preferredVisualisationType: 'trace' },
    fields: TRACE_FIELDS.map(([name, type]) => ({ name, type, values: rows.map((r) => r[name]) })),
  });
}
