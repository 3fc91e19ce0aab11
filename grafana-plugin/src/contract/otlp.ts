/**
 * A small, deterministic LLM workload as OTLP/JSON: three chat traces with GenAI attributes,
 * token logprobs, retrieved documents and answers (one hallucinated), and metrics: a quality
 * series that drives a conversion KPI one step later, an unrelated series, and the four series
 * a detector writes (`latency_guard:predicted|lower|upper|anomalous|likelihood`) with an anomaly in them.
 *
 * Used by the contract test (sent to a real server) and to record the fixtures.
 */

/** 2025-11-30T00:00:00Z, in seconds: every timestamp of the workload is relative to it. */
export const BASE_S = 1764460800;
/** Number of minutes of metric history. */
export const METRIC_POINTS = 120;
/** The workload's range in ms: BASE_S to the last metric point (inclusive). */
export const RANGE = { fromMs: BASE_S * 1000, toMs: (BASE_S + (METRIC_POINTS - 1) * 60) * 1000 };
/** The anomalous minute of the detector series. */
export const ANOMALY_AT = 90;

export const TRACE_HALLUCINATED = '0a0102030405060708090a0b0c0d0e0f';
export const TRACE_GROUNDED = '1b0102030405060708090a0b0c0d0e0f';
export const TRACE_SLOW = '2c0102030405060708090a0b0c0d0e0f';
export const LLM_SPAN_HALLUCINATED = '5a00000000000003';
export const LLM_SPAN_GROUNDED = '6b00000000000003';

/** Logprobs of the hallucinated answer (OpenAI shape). */
export const HALLUCINATED_LOGPROBS = {
  content: [
    { token: 'Paris', logprob: -0.05, top_logprobs: [{ token: 'Paris', logprob: -0.05 }, { token: 'Lyon', logprob: -3.2 }] },
    { token: ' is', logprob: -0.02, top_logprobs: [{ token: ' is', logprob: -0.02 }, { token: ' was', logprob: -4.1 }] },
    { token: ' in', logprob: -0.9, top_logprobs: [{ token: ' the', logprob: -1.2 }, { token: ' in', logprob: -0.9 }, { token: ' near', logprob: -2.3 }] },
    { token: ' Spain', logprob: -1.4, top_logprobs: [{ token: ' France', logprob: -0.7 }, { token: ' Spain', logprob: -1.4 }, { token: ' Europe', logprob: -1.6 }] },
  ],
};

const GROUNDED_LOGPROBS = {
  content: [
    { token: 'Paris', logprob: -0.01, top_logprobs: [{ token: 'Paris', logprob: -0.01 }] },
    { token: ' is', logprob: -0.01, top_logprobs: [{ token: ' is', logprob: -0.01 }] },
    { token: ' in', logprob: -0.05, top_logprobs: [{ token: ' in', logprob: -0.05 }] },
    { token: ' France', logprob: -0.02, top_logprobs: [{ token: ' France', logprob: -0.02 }] },
  ],
};

type AnyValue = { stringValue: string } | { intValue: string } | { doubleValue: number } | { boolValue: boolean };

function kv(key: string, v: string | number | boolean): { key: string; value: AnyValue } {
  if (typeof v === 'string') {
    return { key, value: { stringValue: v } };
  }
  if (typeof v === 'boolean') {
    return { key, value: { boolValue: v } };
  }
  return { key, value: Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v } };
}

const ns = (s: number, ms = 0) => `${Math.round(s * 1000) + ms}000000`;

interface LlmCall {
  traceId: string;
  spanId: string;
  parent: string;
  atS: number;
  ms: number;
  model: string;
  provider: string;
  input: number;
  output: number;
  logprobs: object;
  answer: string;
  error?: string;
  /** Conversation and route (for context expansion by route). */
  conversation?: string;
  route?: string;
  /** Input tokens served from the provider's KV cache. */
  cacheRead?: number;
}

const DOCS = JSON.stringify([{ id: 'kb-1', text: 'Paris is the capital of France. It lies on the Seine.' }]);

function llmSpan(c: LlmCall) {
  return {
    traceId: c.traceId,
    spanId: c.spanId,
    parentSpanId: c.parent,
    name: `chat ${c.model}`,
    kind: 3,
    startTimeUnixNano: ns(c.atS, 200),
    endTimeUnixNano: ns(c.atS, 200 + c.ms),
    status: c.error ? { code: 2, message: c.error } : { code: 1 },
    attributes: [
      kv('gen_ai.operation.name', 'chat'),
      kv('gen_ai.provider.name', c.provider),
      kv('gen_ai.request.model', c.model),
      kv('gen_ai.usage.input_tokens', c.input),
      kv('gen_ai.usage.output_tokens', c.output),
      kv('gen_ai.response.logprobs', JSON.stringify(c.logprobs)),
      kv('gen_ai.retrieval.documents', DOCS),
      kv('gen_ai.output.messages', JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: c.answer }] }])),
      ...(c.conversation ? [kv('gen_ai.conversation.id', c.conversation)] : []),
      ...(c.route ? [kv('app.route', c.route)] : []),
      ...(c.cacheRead !== undefined ? [kv('gen_ai.usage.cache_read.input_tokens', c.cacheRead)] : []),
    ],
    events: [{ timeUnixNano: ns(c.atS, 250), name: 'gen_ai.request.sent', attributes: [kv('attempt', 1)] }],
  };
}

function rootSpan(traceId: string, spanId: string, name: string, atS: number, ms: number, user: string) {
  return {
    traceId,
    spanId,
    name,
    kind: 2,
    startTimeUnixNano: ns(atS),
    endTimeUnixNano: ns(atS, ms),
    attributes: [kv('app.route', name.split(' ')[1]), kv('user.id', user), kv('http.request.method', 'POST')],
  };
}

function retrieveSpan(traceId: string, spanId: string, parent: string, atS: number) {
  return {
    traceId,
    spanId,
    parentSpanId: parent,
    name: 'retrieve',
    kind: 1,
    startTimeUnixNano: ns(atS, 20),
    endTimeUnixNano: ns(atS, 180),
    attributes: [kv('gen_ai.operation.name', 'retrieval'), kv('retrieval.documents.count', 1)],
  };
}

const resource = (service: string, spans: object[]) => ({
  resource: { attributes: [kv('service.name', service), kv('deployment.environment', 'contract-test')] },
  scopeSpans: [{ scope: { name: 'sightline-plugin-contract', version: '1.0.0' }, spans }],
});

/** OTLP/JSON traces request body. */
export function tracesBody() {
  const t1 = BASE_S + 600;
  const t2 = BASE_S + 1200;
  const t3 = BASE_S + 1800;
  return {
    resourceSpans: [
      resource('chat-api', [
        rootSpan(TRACE_HALLUCINATED, '5a00000000000001', 'POST /chat', t1, 3000, 'u-42'),
        rootSpan(TRACE_GROUNDED, '6b00000000000001', 'POST /chat', t2, 1500, 'u-7'),
        {
          ...rootSpan(TRACE_SLOW, '7c00000000000001', 'POST /summarize', t3, 4500, 'u-42'),
          // The summary follows up the hallucinated chat.
          links: [{ traceId: TRACE_HALLUCINATED, spanId: '5a00000000000001', attributes: [kv('link.reason', 'follow-up')] }],
        },
      ]),
      resource('retriever', [
        retrieveSpan(TRACE_HALLUCINATED, '5a00000000000002', '5a00000000000001', t1),
        retrieveSpan(TRACE_GROUNDED, '6b00000000000002', '6b00000000000001', t2),
      ]),
      resource('llm-gw', [
        llmSpan({
          traceId: TRACE_HALLUCINATED,
          spanId: LLM_SPAN_HALLUCINATED,
          parent: '5a00000000000001',
          atS: t1,
          ms: 2500,
          model: 'gpt-4o',
          provider: 'openai',
          input: 120,
          output: 30,
          logprobs: HALLUCINATED_LOGPROBS,
          answer: 'Paris is in Spain.',
          error: 'upstream failed',
          conversation: 'conv-1',
          route: '/chat',
        }),
        llmSpan({
          traceId: TRACE_GROUNDED,
          spanId: LLM_SPAN_GROUNDED,
          parent: '6b00000000000001',
          atS: t2,
          ms: 1100,
          model: 'claude-sonnet-4',
          provider: 'anthropic',
          input: 200,
          output: 80,
          logprobs: GROUNDED_LOGPROBS,
          answer: 'Paris is in France.',
          // The second turn of the same conversation: its context grew from 120 to 200 tokens.
          conversation: 'conv-1',
          route: '/chat',
          cacheRead: 120,
        }),
        llmSpan({
          traceId: TRACE_SLOW,
          spanId: '7c00000000000003',
          parent: '7c00000000000001',
          atS: t3,
          ms: 4200,
          model: 'gpt-4o-mini',
          provider: 'openai',
          input: 900,
          output: 150,
          logprobs: GROUNDED_LOGPROBS,
          answer: 'Paris is in France.',
        }),
      ]),
    ],
  };
}

/** Deterministic pseudo-random numbers in [-0.5, 0.5) (mulberry32). */
function noise(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32 - 0.5;
  };
}

/** The metric series, by name, as values per minute from BASE_S. */
export function metricSeries(): Record<string, number[]> {
  const r = noise(7);
  const quality = Array.from({ length: METRIC_POINTS }, (_, i) => Math.sin(i / 5) + 0.6 * r());
  const conversion = quality.map((_, i) => (i === 0 ? 0 : 0.8 * quality[i - 1]) + 0.4 * r());
  const other = noise(99);
  const unrelated = Array.from({ length: METRIC_POINTS }, () => other());
  const latency = Array.from({ length: METRIC_POINTS }, (_, i) => 1 + 0.2 * Math.sin(i / 10) + 0.05 * r() + (i === ANOMALY_AT ? 1.5 : 0));
  const predicted = Array.from({ length: METRIC_POINTS }, (_, i) => 1 + 0.2 * Math.sin(i / 10));
  return {
    answer_quality: quality,
    conversion_rate: conversion,
    unrelated_noise: unrelated,
    chat_latency: latency,
    'latency_guard:predicted': predicted,
    'latency_guard:lower': predicted.map((p) => p - 0.3),
    'latency_guard:upper': predicted.map((p) => p + 0.3),
    'latency_guard:anomalous': latency.map((v, i) => (Math.abs(v - predicted[i]) > 0.3 ? 1 : 0)),
    // red at the spike, then the yellow level for the point after it (tail 1e-3 -> 0.3)
    'latency_guard:likelihood': latency.map((_, i) => (i === ANOMALY_AT ? 0.9 : i === ANOMALY_AT + 1 ? 0.3 : 0.02)),
  };
}

/**
 * OTLP/JSON metrics request body: gauges of the series above, labelled model="gpt-4o", from
 * `baseS`; `only` keeps one series, renamed (for a live copy relative to now).
 */
export function metricsBody(baseS = BASE_S, only?: string) {
  const all = metricSeries();
  const series = only ? { [only]: all.chat_latency } : all;
  return {
    resourceMetrics: [
      {
        resource: { attributes: [kv('service.name', 'chat')] },
        scopeMetrics: [
          {
            metrics: Object.entries(series).map(([name, values]) => ({
              name,
              gauge: {
                dataPoints: values.map((v, i) => ({
                  timeUnixNano: ns(baseS + i * 60),
                  asDouble: v,
                  attributes: [kv('model', 'gpt-4o')],
                })),
              },
            })),
          },
        ],
      },
    ],
  };
}
