import { DataFrame, DataQueryRequest, DataSourceInstanceSettings, dateTime } from '@grafana/data';
import { Observable, of, throwError } from 'rxjs';

import { RANGE, TRACE_HALLUCINATED } from './contract/otlp';
import { DataSource } from './datasource';
import { fixture, Fixture } from './test/fixtures';
import { QueryType, SightlineOptions, SightlineQuery } from './types';

interface FetchCall {
  url: string;
  method: string;
  params?: Record<string, unknown>;
  data?: unknown;
  headers: Record<string, string>;
}

const calls: FetchCall[] = [];
let answers: Record<string, Fixture> = {};

/** backendSrv.fetch answering from fixtures by path, as Grafana does (errors as FetchError). */
const fetchMock = jest.fn((o: FetchCall): Observable<unknown> => {
  calls.push(o);
  const path = o.url.replace('/api/datasources/proxy/uid/ds1/sightline', '');
  const fx = answers[path];
  if (!fx) {
    return throwError(() => ({ status: 404, statusText: 'Not Found', data: '' }));
  }
  if (fx.status >= 400) {
    return throwError(() => ({ status: fx.status, statusText: 'error', data: fx.body }));
  }
  return of({ data: fx.body, status: fx.status, ok: true });
});

const VARS: Record<string, string> = { $model: 'gpt-4o', $detector: 'latency_guard', $trace: TRACE_HALLUCINATED };
jest.mock('@grafana/runtime', () => ({
  getBackendSrv: () => ({ fetch: fetchMock }),
  getTemplateSrv: () => ({ replace: (s: string) => s.replace(/\$\w+/g, (v) => VARS[v] ?? v) }),
}));

function ds(jsonData: SightlineOptions = {}) {
  return new DataSource({
    id: 1,
    uid: 'ds1',
    name: 'Sightline',
    type: 'sightline-llm-datasource',
    url: '/api/datasources/proxy/uid/ds1',
    jsonData,
    access: 'proxy',
    readOnly: false,
    meta: {},
  } as unknown as DataSourceInstanceSettings<SightlineOptions>);
}

function request(targets: SightlineQuery[]): DataQueryRequest<SightlineQuery> {
  const from = dateTime(RANGE.fromMs);
  const to = dateTime(RANGE.toMs);
  return {
    targets,
    range: { from, to, raw: { from, to } },
    intervalMs: 60_000,
    interval: '1m',
    scopedVars: {},
  } as unknown as DataQueryRequest<SightlineQuery>;
}

function serve(...names: string[]) {
  answers = {};
  for (const n of names) {
    const fx = fixture(n);
    answers[fx.request.path] = fx;
  }
}

beforeEach(() => {
  calls.length = 0;
  answers = {};
});

describe('requests through the datasource proxy', () => {
  it('prefixes the plugin route, passes params and sends the tenant header only when set', async () => {
    serve('traces-search-gpt-4o');
    const res = await ds({ tenant: 'acme' }).query(request([{ refId: 'A', queryType: QueryType.TraceSearch, model: '$model' }]));
    expect(res.errors).toBeUndefined();
    expect(calls[0].url).toBe('/api/datasources/proxy/uid/ds1/sightline/api/v1/traces/search');
    expect(calls[0].params).toEqual(fixture('traces-search-gpt-4o').request.params);
    expect(calls[0].headers).toEqual({ 'X-Scope-OrgID': 'acme' });
    await ds().query(request([{ refId: 'A', queryType: QueryType.TraceSearch, model: 'gpt-4o' }]));
    expect(calls[1].headers).toEqual({});
  });

  it('posts Granger pairs with JSON bodies and returns table and node graph', async () => {
    serve('granger-quality-conversion');
    const res = await ds().query(
      request([{ refId: 'G', queryType: QueryType.Granger, causes: ['answer_quality'], effects: ['conversion_rate'], maxLag: 3 }])
    );
    expect(calls[0].method).toBe('POST');
    expect(calls[0].data).toEqual(fixture('granger-quality-conversion').request.data);
    expect((res.data as DataFrame[]).map((f) => f.name)).toEqual(['granger', 'nodes', 'edges']);
  });

  it('asks for the detector spec and draws bands without it when the server has none', async () => {
    serve('query-range-bands');
    const res = await ds().query(request([{ refId: 'B', queryType: QueryType.Anomalies, detector: '$detector', step: '1m' }]));
    expect(res.errors).toBeUndefined();
    expect(calls.map((c) => c.url.split('/sightline')[1]).sort()).toEqual(['/api/v1/detectors/latency_guard', '/api/v1/query_range']);
    expect((res.data as DataFrame[]).map((f) => f.name)).toEqual(['job="chat", model="gpt-4o"']);
  });

  it('adds the source series of a described detector', async () => {
    serve('query-range-bands', 'detector');
    const source = fixture('query-range-source');
    const bands = answers['/api/v1/query_range'];
    fetchMock.mockImplementationOnce((o: FetchCall) => {
      calls.push(o);
      return of({ data: bands.body });
    });
    fetchMock.mockImplementationOnce((o: FetchCall) => {
      calls.push(o);
      return of({ data: fixture('detector').body });
    });
    fetchMock.mockImplementationOnce((o: FetchCall) => {
      calls.push(o);
      return of({ data: source.body });
    });
    const res = await ds().query(request([{ refId: 'B', queryType: QueryType.Anomalies, detector: 'latency_guard', step: '1m' }]));
    expect(calls[2].params).toEqual(source.request.params);
    const value = (res.data as DataFrame[])[0].fields.find((f) => f.name === 'value')!.values as number[];
    expect(value.every((v) => typeof v === 'number')).toBe(true);
  });

  it('reports errors per query and still returns the others', async () => {
    serve('trace-404', 'annotations');
    const res = await ds().query(
      request([
        { refId: 'T', queryType: QueryType.Trace, traceId: 'ffffffffffffffffffffffffffffffff' },
        { refId: 'E', queryType: QueryType.AnomalyEvents, detector: 'latency_guard' },
        { refId: 'X', queryType: QueryType.Tokens, traceId: 'abc', spanId: 'nope' },
        { refId: 'H', queryType: QueryType.TraceSearch, hide: true },
      ])
    );
    const body = fixture<{ error: string }>('trace-404').body;
    expect(res.errors).toEqual([
      { refId: 'T', message: `Sightline answered 404: ${body.error}` },
      { refId: 'X', message: 'span id must be 16 hex digits' },
    ]);
    expect((res.data as DataFrame[]).map((f) => f.refId)).toEqual(['E']);
    expect(calls).toHaveLength(2); // the hidden query and the invalid one sent nothing
  });

  it('replaces template variables in every text field and list', () => {
    const q = ds().applyTemplateVariables(
      { refId: 'A', model: '$model', traceId: '$trace', causes: ['avg(q{model="$model"})'], attrs: ['m=$model'] },
      {}
    );
    expect(q).toMatchObject({
      model: 'gpt-4o',
      traceId: TRACE_HALLUCINATED,
      causes: ['avg(q{model="gpt-4o"})'],
      attrs: ['m=gpt-4o'],
    });
  });
});

describe('health check', () => {
  it('names the server and tenant', async () => {
    serve('buildinfo');
    const res = await ds({ tenant: 'acme' }).testDatasource();
    const info = fixture<{ data: { revision: string } }>('buildinfo').body.data;
    expect(res).toEqual({ status: 'success', message: `Connected to Sightline ${info.revision} (tenant acme)` });
  });

  it('explains a 401', async () => {
    serve('buildinfo-401');
    const res = await ds().testDatasource();
    expect(res.status).toBe('error');
    expect(res.message).toMatch(/refused the credentials \(401\).*bearer token/);
  });

  it('explains an unreachable server', async () => {
    fetchMock.mockImplementationOnce(() => throwError(() => new Error('connect ECONNREFUSED')));
    const res = await ds().testDatasource();
    expect(res).toEqual({ status: 'error', message: 'Cannot reach Sightline at the configured URL: connect ECONNREFUSED' });
  });
});

describe('template variables', () => {
  it('reads /api/v1/quality/values, deduplicated and sorted', async () => {
    serve('quality-values-model');
    const values = await ds().metricFindQuery('models()');
    expect(values).toEqual([
      { text: 'claude-sonnet-4', value: 'claude-sonnet-4' },
      { text: 'gpt-4o', value: 'gpt-4o' },
      { text: 'gpt-4o-mini', value: 'gpt-4o-mini' },
    ]);
  });

  it('falls back to Tempo tag values on a server without it', async () => {
    serve('tag-values-model');
    const values = await ds().metricFindQuery({ query: 'models' });
    expect(values.map((v) => v.text)).toEqual(fixture<{ tagValues: string[] }>('tag-values-model').body.tagValues.slice().sort());
    expect(calls.map((c) => c.url.split('/sightline')[1])).toEqual([
      '/api/v1/quality/values',
      '/api/search/tag/gen_ai.request.model/values',
    ]);
  });

  it('lists detectors and refuses unknown kinds', async () => {
    serve('detectors');
    expect((await ds().metricFindQuery('detectors()')).map((v) => v.text)).toEqual(['hallucination_watch', 'latency_guard']);
    await expect(ds().metricFindQuery('users()')).rejects.toThrow(/use one of models\(\), providers\(\)/);
  });
});

describe('annotations', () => {
  it('supports annotations with anomaly events as the default query', () => {
    expect(ds().annotations?.getDefaultQuery?.()).toEqual({ queryType: QueryType.AnomalyEvents });
  });
});
