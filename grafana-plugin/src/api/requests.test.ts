import { RANGE } from '../contract/otlp';
import { fixture } from '../test/fixtures';
import { QueryType } from '../types';
import * as rq from './requests';

describe('durations and steps', () => {
  it('parses Prometheus-style durations', () => {
    expect(rq.durationMs('30s')).toBe(30_000);
    expect(rq.durationMs('1h30m')).toBe(5_400_000);
    expect(rq.durationMs('250ms')).toBe(250);
    expect(rq.durationMs('1.5s')).toBe(1_500);
    expect(rq.durationMs('2d')).toBe(172_800_000);
    expect(rq.durationMs('1500')).toBe(1_500);
    expect(() => rq.durationMs('soon')).toThrow(/invalid duration "soon"/);
    expect(() => rq.durationMs('5 minutes')).toThrow(rq.QueryError);
  });

  it('takes the query step, else the panel interval, never under a second', () => {
    expect(rq.stepMs({ refId: 'A', step: '5m' }, 15_000)).toBe(300_000);
    expect(rq.stepMs({ refId: 'A' }, 15_000)).toBe(15_000);
    expect(rq.stepMs({ refId: 'A' }, 20)).toBe(1_000);
    expect(rq.stepMs({ refId: 'A' }, undefined)).toBe(60_000);
  });
});

describe('request builders match what the server was asked in the fixtures', () => {
  it('builds the quality request of the contract', () => {
    const q = { refId: 'A', metric: 'hallucination_index' as const, by: 'model', step: '10m' };
    expect(rq.qualityRequest(q, RANGE)).toEqual(fixture('quality').request);
    const filtered = rq.qualityRequest({ ...q, service: ' chat-api ', model: '', provider: 'openai' }, RANGE, 1000);
    expect(filtered.params).toMatchObject({ service: 'chat-api', provider: 'openai' });
    expect(filtered.params).not.toHaveProperty('model');
    expect(rq.qualityRequest({ ...q, by: 'attr.app.tenant-id' }, RANGE).params?.by).toBe('attr.app.tenant-id');
    expect(() => rq.qualityRequest({ ...q, by: 'user' }, RANGE)).toThrow(/cannot group by "user"/);
    expect(() => rq.qualityRequest({ ...q, metric: 'vibes' as never }, RANGE)).toThrow(/unknown quality metric/);
  });

  it('builds trace search requests', () => {
    expect(rq.traceSearchRequest({ refId: 'A', model: 'gpt-4o' }, RANGE)).toEqual(fixture('traces-search-gpt-4o').request);
    const r = rq.traceSearchRequest(
      {
        refId: 'A',
        service: 'llm-gw',
        status: 'error',
        minDuration: '2s',
        minHallucination: 0.5,
        minEntropyMean: 0,
        attrs: ['user.tier=pro', ' ', 'gen_ai.request.model=~gpt-.*'],
        traceql: '{ span.user.id = "u-42" }',
        limit: 10,
      },
      RANGE
    );
    expect(r.params).toEqual({
      start: RANGE.fromMs / 1000,
      end: RANGE.toMs / 1000,
      limit: 10,
      service: 'llm-gw',
      status: 'error',
      min_duration: '2s',
      min_hallucination: 0.5,
      min_entropy_mean: 0,
      attr: ['user.tier=pro', 'gen_ai.request.model=~gpt-.*'],
      q: '{ span.user.id = "u-42" }',
    });
    expect(() => rq.traceSearchRequest({ refId: 'A', attrs: ['just-a-key'] }, RANGE)).toThrow(/must be key=value/);
  });

  it('builds Granger requests for every cause x effect pair', () => {
    const q = {
      refId: 'A',
      queryType: QueryType.Granger,
      causes: ['answer_quality', 'unrelated_noise', 'no_such_metric'],
      effects: ['conversion_rate'],
      maxLag: 3,
    };
    const pairs = rq.grangerRequests(q, RANGE, 60_000);
    expect(pairs.map((p) => p.request)).toEqual([
      fixture('granger-quality-conversion').request,
      fixture('granger-noise-conversion').request,
      fixture('granger-400').request,
    ]);
    // A query is not tested against itself.
    expect(rq.grangerRequests({ ...q, causes: ['a', 'b'], effects: ['b'] }, RANGE)).toHaveLength(1);
    expect(() => rq.grangerRequests({ ...q, causes: ['b'], effects: ['b'] }, RANGE)).toThrow(/nothing to test/);
    expect(() => rq.grangerRequests({ ...q, effects: [] }, RANGE)).toThrow(/at least one cause and one effect/);
    const many = Array.from({ length: 6 }, (_, i) => `m${i}`);
    expect(() => rq.grangerRequests({ ...q, causes: many, effects: many.map((m) => `${m}_e`) }, RANGE)).toThrow(/at most 25/);
    expect(() => rq.grangerRequests({ ...q, maxLag: 0 }, RANGE)).toThrow(/max lag/);
  });

  it('builds the band query of a detector and refuses names that are not metric prefixes', () => {
    const q = { refId: 'A', detector: 'latency_guard', step: '1m' };
    expect(rq.anomalyBandRequest(q, RANGE)).toEqual(fixture('query-range-bands').request);
    expect(() => rq.anomalyBandRequest({ refId: 'A' }, RANGE)).toThrow(/choose a detector/);
    expect(() => rq.anomalyBandRequest({ refId: 'A', detector: 'x"} or vector(1)' }, RANGE)).toThrow(/not a valid metric name/);
    expect(rq.annotationsRequest({ refId: 'A', detector: 'latency_guard' }, RANGE)).toEqual(fixture('annotations').request);
    expect(rq.detectorsRequest()).toEqual(fixture('detectors').request);
    expect(rq.detectorRequest('latency_guard')).toEqual(fixture('detector').request);
  });

  it('builds trace and token requests from hex ids', () => {
    expect(rq.traceRequest({ refId: 'A', traceId: '0A0102030405060708090A0B0C0D0E0F' })).toEqual(fixture('trace').request);
    expect(() => rq.traceRequest({ refId: 'A', traceId: 'not-hex' })).toThrow(/trace id/);
    expect(() => rq.traceRequest({ refId: 'A' })).toThrow(/trace id/);
    expect(rq.tokensRequest({ refId: 'A', traceId: '0a0102030405060708090a0b0c0d0e0f', spanId: '5A00000000000003' })).toEqual(
      fixture('quality-tokens').request
    );
    expect(rq.tokensRequest({ refId: 'A', traceId: 'abc', spanId: '5a00000000000003' }).params?.trace_id).toBe(
      '00000000000000000000000000000abc'
    );
    expect(() => rq.tokensRequest({ refId: 'A', traceId: 'abc', spanId: '5a' })).toThrow(/span id must be 16 hex digits/);
  });

  it('encodes query strings with repeated keys', () => {
    expect(rq.queryString({ a: 'x y', attr: ['k=v', 'j!=w'], n: 1.5 })).toBe('?a=x+y&attr=k%3Dv&attr=j%21%3Dw&n=1.5');
    expect(rq.queryString(undefined)).toBe('');
    expect(rq.queryString({})).toBe('');
  });
});
