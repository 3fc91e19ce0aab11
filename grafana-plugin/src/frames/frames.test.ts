import { DataFrame, FieldType } from '@grafana/data';

import { AnnotationEvent, GrangerResponse, PromMatrix, QualityResponse, TokensResponse, TraceResponse, TraceSearchResponse, unwrap } from '../api/responses';
import { ANOMALY_AT, LLM_SPAN_HALLUCINATED, metricSeries, TRACE_HALLUCINATED } from '../contract/otlp';
import { fixture } from '../test/fixtures';
import { QueryType } from '../types';
import { annotationFrame, bandFrames, seriesKey } from './anomalies';
import { benjaminiHochberg, grangerNodeGraph, grangerTable } from './granger';
import { qualityFrames } from './quality';
import { ENTROPY_THRESHOLDS, tokensFrame } from './tokens';
import { nsToMs, traceFrame, traceSearchFrame } from './traces';

const values = (f: DataFrame, name: string) => {
  const field = f.fields.find((x) => x.name === name);
  if (!field) {
    throw new Error(`no field ${name} in ${f.fields.map((x) => x.name)}`);
  }
  return field.values as unknown[];
};
const config = (f: DataFrame, name: string) => f.fields.find((x) => x.name === name)!.config;

describe('trace search (recorded)', () => {
  const fx = fixture('traces-search-all');
  const body = unwrap<TraceSearchResponse>(fx.body);

  it('maps one row per trace with its LLM call', () => {
    expect(fx.source).toBe('recorded');
    const frame = traceSearchFrame(body, 'A', { uid: 'ds1', name: 'Sightline' });
    expect(frame.length).toBe(body.traces.length);
    expect(values(frame, 'traceID')).toEqual(body.traces.map((t) => t.trace_id));
    expect(values(frame, 'start')).toEqual(body.traces.map((t) => nsToMs(t.start_unix_nano)));
    const i = body.traces.findIndex((t) => t.trace_id === TRACE_HALLUCINATED);
    expect(values(frame, 'model')[i]).toBe('gpt-4o');
    expect(values(frame, 'status')[i]).toBe('error');
    expect(values(frame, 'spanID')[i]).toBe(LLM_SPAN_HALLUCINATED);
    expect(values(frame, 'input tokens')[i]).toBe(120);
    expect(frame.fields.find((f) => f.name === 'start')!.type).toBe(FieldType.time);
    expect(frame.meta?.custom).toEqual({ totalTraces: body.total_traces, totalSpans: body.total_spans });
  });

  it('links trace ids to the trace view and LLM spans to their tokens', () => {
    const frame = traceSearchFrame(body, 'A', { uid: 'ds1', name: 'Sightline' });
    const [trace] = config(frame, 'traceID').links!;
    expect(trace.internal).toEqual({
      datasourceUid: 'ds1',
      datasourceName: 'Sightline',
      query: { refId: 'A', queryType: QueryType.Trace, traceId: '${__value.raw}' },
    });
    const [tokens] = config(frame, 'spanID').links!;
    expect(tokens.internal?.query).toEqual({
      refId: 'A',
      queryType: QueryType.Tokens,
      traceId: '${__data.fields.traceID}',
      spanId: '${__value.raw}',
    });
    expect(config(traceSearchFrame(body, 'A'), 'traceID').links).toEqual([]);
  });

  it('maps an empty result to an empty table', () => {
    const frame = traceSearchFrame({ traces: [], total_traces: 0, total_spans: 0 }, 'A');
    expect(frame.length).toBe(0);
    expect(values(frame, 'traceID')).toEqual([]);
  });
});

describe('trace (recorded)', () => {
  const body = unwrap<TraceResponse>(fixture('trace').body);
  const frame = traceFrame(body, 'T');

  it('has the fields of Grafana trace frames', () => {
    expect(frame.meta?.preferredVisualisationType).toBe('trace');
    for (const name of ['traceID', 'spanID', 'parentSpanID', 'operationName', 'serviceName', 'serviceTags', 'startTime', 'duration', 'logs', 'tags', 'kind', 'statusCode', 'statusMessage']) {
      expect(values(frame, name)).toHaveLength(body.spans.length);
    }
    expect(values(frame, 'duration')).toEqual(body.spans.map((s) => nsToMs(s.duration_nano)));
    expect(values(frame, 'statusCode')).toEqual(body.spans.map((s) => ({ unset: 0, ok: 1, error: 2 })[s.status.code]));
    expect(values(frame, 'parentSpanID')[0]).toBeUndefined();
  });

  it('puts GenAI columns back under their semantic-convention names', () => {
    const llm = body.spans.findIndex((s) => s.span_id === LLM_SPAN_HALLUCINATED);
    const tags = values(frame, 'tags')[llm] as Array<{ key: string; value: unknown }>;
    const keys = tags.map((t) => t.key);
    expect(keys).toEqual(expect.arrayContaining(['gen_ai.request.model', 'gen_ai.provider.name', 'gen_ai.usage.output_tokens']));
    expect(keys).not.toContain('gen_ai.response_model'); // null columns are left out
    expect(new Set(keys).size).toBe(keys.length); // no attribute twice
    const critical = new Set(body.critical_path.map((c) => c.span_id));
    const flagged = (values(frame, 'tags') as Array<Array<{ key: string }>>).map((t) => t.some((x) => x.key === 'sightline.critical_path'));
    expect(flagged).toEqual(body.spans.map((s) => critical.has(s.span_id)));
  });

  it('rounds epoch nanoseconds to microseconds', () => {
    expect(nsToMs(1764461400250000000)).toBe(1764461400250);
    expect(nsToMs(1500)).toBe(0.002);
  });
});

describe('Granger (recorded)', () => {
  const quality = fixture<GrangerResponse>('granger-quality-conversion');
  const noise = fixture<GrangerResponse>('granger-noise-conversion');
  const refused = fixture<{ error: string }>('granger-400');
  const outcomes = [
    { cause: 'answer_quality', effect: 'conversion_rate', response: quality.body },
    { cause: 'unrelated_noise', effect: 'conversion_rate', response: noise.body },
    { cause: 'no_such_metric', effect: 'conversion_rate', error: refused.body.error },
  ];

  it('tabulates the AIC-selected lag of each pair with BH-adjusted p-values', () => {
    expect(refused.status).toBe(400);
    const t = grangerTable(outcomes, 0.05, 'G');
    const sel = quality.body.lags.find((l) => l.lag === quality.body.selected_lag.aic)!;
    expect(values(t, 'cause')).toEqual(['answer_quality', 'unrelated_noise', 'no_such_metric']);
    expect(values(t, 'lag')[0]).toBe(sel.lag);
    expect(values(t, 'F')[0]).toBe(sel.ssr_ftest.F);
    expect(values(t, 'p')[0]).toBe(sel.ssr_ftest.p);
    const noiseSel = noise.body.lags.find((l) => l.lag === noise.body.selected_lag.aic)!;
    expect(values(t, 'q (BH)').slice(0, 2)).toEqual(benjaminiHochberg([sel.ssr_ftest.p, noiseSel.ssr_ftest.p]));
    expect(values(t, 'significant')).toEqual([true, false, false]);
    expect(values(t, 'error')[2]).toMatch(/exactly one series/);
  });

  it('draws significant pairs as node-graph edges', () => {
    const [nodes, edges] = grangerNodeGraph(outcomes, 0.05, 'G');
    expect(nodes.name).toBe('nodes');
    expect(edges.name).toBe('edges');
    expect(nodes.meta?.preferredVisualisationType).toBe('nodeGraph');
    expect(values(nodes, 'title')).toEqual(['answer_quality', 'conversion_rate', 'unrelated_noise', 'no_such_metric']);
    expect(values(nodes, 'mainstat')).toEqual([1, 0, 0, 0]);
    expect(values(nodes, 'secondarystat')).toEqual([0, 1, 0, 0]);
    expect(values(edges, 'id')).toEqual(['n0->n1']);
    expect(values(edges, 'mainstat')).toEqual([`lag ${quality.body.selected_lag.aic}`]);
    const sel = quality.body.lags.find((l) => l.lag === quality.body.selected_lag.aic)!;
    expect(values(edges, 'thickness')).toEqual([1 + 4 * sel.partial_r2!]);
  });

  it('adjusts p-values with Benjamini-Hochberg', () => {
    // p sorted: 0.005, 0.01, 0.03, 0.04 (m = 4): 0.02, 0.02, 0.04, 0.04 after the monotone step.
    const q = benjaminiHochberg([0.01, 0.04, null, 0.03, 0.005]);
    expect(q[2]).toBeNull();
    expect(q[0]).toBeCloseTo(0.02, 12);
    expect(q[1]).toBeCloseTo(0.04, 12);
    expect(q[3]).toBeCloseTo(0.04, 12);
    expect(q[4]).toBeCloseTo(0.02, 12);
    expect(benjaminiHochberg([0.9, 0.95])).toEqual([0.95, 0.95]);
  });
});

describe('detector bands (recorded)', () => {
  const bands = unwrap<PromMatrix>(fixture('query-range-bands').body).result;
  const source = unwrap<PromMatrix>(fixture('query-range-source').body).result;
  const series = metricSeries();

  it('joins predicted, bounds, actual and anomalies per label set', () => {
    const [frame, ...rest] = bandFrames('latency_guard', bands, source, 'B');
    expect(rest).toEqual([]);
    expect(frame.name).toBe('job="chat", model="gpt-4o"');
    expect(values(frame, 'predicted')).toEqual(series['latency_guard:predicted']);
    expect(values(frame, 'lower')).toEqual(series['latency_guard:lower']);
    expect(values(frame, 'value')).toEqual(series.chat_latency);
    const marks = values(frame, 'anomaly');
    expect(marks[ANOMALY_AT]).toBe(series.chat_latency[ANOMALY_AT]);
    expect(marks.filter((v) => v !== null)).toHaveLength(series['latency_guard:anomalous'].filter((v) => v === 1).length);
    expect(config(frame, 'upper').custom.fillBelowTo).toBe(config(frame, 'lower').displayNameFromDS);
    expect(values(frame, 'likelihood')).toEqual(series['latency_guard:likelihood']);
    expect(config(frame, 'likelihood')).toMatchObject({ min: 0, max: 1, custom: { axisPlacement: 'right' } });
  });

  it('leaves the likelihood out for a server that does not write it', () => {
    const without = bands.filter((s) => s.metric.__name__ !== 'latency_guard:likelihood');
    const [frame] = bandFrames('latency_guard', without, source, 'B');
    expect(frame.fields.map((f) => f.name)).not.toContain('likelihood');
    expect(values(frame, 'predicted')).toEqual(series['latency_guard:predicted']);
  });

  it('ignores series of other detectors and source series the detector does not cover', () => {
    const foreign = { metric: { __name__: 'other:predicted', job: 'x' }, values: [[1, '1']] as Array<[number, string]> };
    const uncovered = { metric: { __name__: 'chat_latency', job: 'other' }, values: [[1, '5']] as Array<[number, string]> };
    const frames = bandFrames('latency_guard', [...bands, foreign], [...source, uncovered], 'B');
    expect(frames.map((f) => f.name)).toEqual(['job="chat", model="gpt-4o"']);
  });

  it('keys label sets without the metric name, in a stable order', () => {
    expect(seriesKey({ b: '2', __name__: 'x', a: '1' })).toBe('a="1", b="2"');
  });
});

describe('contract fixtures (endpoints being built)', () => {
  it('maps quality series to one frame per group', () => {
    const body = unwrap<QualityResponse>(fixture('quality').body);
    const frames = qualityFrames(body, 'Q');
    expect(frames.map((f) => f.name)).toEqual(body.series.map((s) => s.group));
    expect(values(frames[1], 'Time')).toEqual(body.series[1].points.map((p) => p[0]));
    expect(values(frames[1], 'hallucination_index')).toEqual(body.series[1].points.map((p) => p[1]));
    expect(frames[1].fields[1].labels).toEqual({ model: 'gpt-4o' });
    expect(config(frames[1], 'hallucination_index')).toMatchObject({ unit: 'percentunit', displayNameFromDS: 'gpt-4o' });
  });

  it('maps tokens with probabilities, alternatives and entropy colours', () => {
    const body = unwrap<TokensResponse>(fixture('quality-tokens').body);
    const frame = tokensFrame(body, 'K');
    expect(values(frame, 'token')).toEqual(body.tokens.map((t) => t.token));
    expect(values(frame, 'probability')).toEqual(body.tokens.map((t) => Math.exp(t.logprob)));
    expect(values(frame, 'alternatives')[3]).toBe('" France" 49.7%, " Europe" 20.2%');
    const entropy = config(frame, 'entropy');
    expect(entropy.custom.cellOptions).toEqual({ type: 'color-background', applyToRow: true });
    expect(entropy.thresholds!.steps.map((s) => s.value)).toEqual([-Infinity, ENTROPY_THRESHOLDS.hesitant, ENTROPY_THRESHOLDS.uncertain]);
    expect(frame.meta?.custom).toEqual({ model: 'gpt-4o', entropyMean: body.entropy_mean, hallucinationIndex: body.hallucination_index });
  });

  it('maps anomaly events to annotation frames in time order', () => {
    const body = unwrap<AnnotationEvent[]>(fixture('annotations').body);
    const frame = annotationFrame(body, 'E');
    expect(frame.fields.map((f) => f.name)).toEqual(['time', 'timeEnd', 'title', 'text', 'tags']);
    expect(values(frame, 'time')).toEqual([body[1].time, body[0].time]);
    expect(values(frame, 'timeEnd')).toEqual([body[1].time, body[0].timeEnd]); // open events end where they start
    expect(values(frame, 'tags')[1]).toContain('level:high');
  });
});
