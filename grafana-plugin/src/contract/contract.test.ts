/**
 * @jest-environment node
 */
/**
 * Contract test: the plugin's DataSource, through a reproduction of Grafana's datasource proxy
 * (plugin.json's route, token injection), against a real `sightline serve` holding a small
 * OTLP workload. Every request the plugin builds is answered by the server and mapped to frames;
 * the assertions are on those frames.
 *
 * Endpoints still being built (detectors, anomalies, quality) are exercised when the server
 * has them; against an older server those tests print that they were skipped, unless
 * SIGHTLINE_REQUIRE_PLUGIN_ENDPOINTS=1 makes a missing endpoint a failure.
 */
import { DataFrame, dateTime } from '@grafana/data';

import { benjaminiHochberg } from '../frames/granger';
import { dashboards, substitute } from '../test/dashboards';
import { QueryType, SightlineQuery } from '../types';
import { binaryAvailable, dataSource, request } from './harness';
import {
  ANOMALY_AT,
  BASE_S,
  HALLUCINATED_LOGPROBS,
  LLM_SPAN_HALLUCINATED,
  metricSeries,
  metricsBody,
  TRACE_GROUNDED,
  TRACE_HALLUCINATED,
  TRACE_SLOW,
  tracesBody,
} from './otlp';
import { PROXY_PREFIX, proxiedBackendSrv, ProxySettings, Sent } from './proxy';
import { SightlineServer } from './server';

let backend: ReturnType<typeof proxiedBackendSrv>;
jest.mock('@grafana/runtime', () => ({
  getBackendSrv: () => backend,
  getTemplateSrv: () => ({ replace: (s: string) => s }),
}));

const run = binaryAvailable() ? describe : describe.skip;
jest.setTimeout(60_000);

function field(frame: DataFrame, name: string): unknown[] {
  const f = frame.fields.find((x) => x.name === name);
  if (!f) {
    throw new Error(`frame ${frame.name} has no field ${name}; has ${frame.fields.map((x) => x.name).join(', ')}`);
  }
  return f.values as unknown[];
}

/**
 * Whether the server has an endpoint: any answer but a bare 404 (an API's own 404, e.g. "no such
 * span", comes with a JSON error body); logs the skip otherwise.
 */
async function hasEndpoint(server: SightlineServer, path: string, what: string): Promise<boolean> {
  const r = await fetch(`${server.url}${path}`);
  if (r.status !== 404 || (await r.text()).trim().startsWith('{')) {
    return true;
  }
  if (process.env.SIGHTLINE_REQUIRE_PLUGIN_ENDPOINTS === '1') {
    throw new Error(`${what}: ${path} is not on this server`);
  }
  // eslint-disable-next-line no-console
  console.log(`skipped ${what}: ${path} is not on this server yet`);
  return false;
}

run('plugin against a real sightline (auth off)', () => {
  let server: SightlineServer;
  const sent: Sent[] = [];

  beforeAll(async () => {
    server = await SightlineServer.start();
    await server.ingest('traces', tracesBody(), { 'X-Scope-OrgID': 'acme' });
    await server.ingest('metrics', metricsBody(), { 'X-Scope-OrgID': 'acme' });
    const settings: ProxySettings = { url: server.url, jsonData: { tenant: 'acme' } };
    backend = proxiedBackendSrv(settings, sent);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('passes the health check and sends the tenant through the plugin route', async () => {
    const res = await dataSource({ tenant: 'acme' }).testDatasource();
    expect(res.status).toBe('success');
    expect(res.message).toMatch(/^Connected to Sightline sightline-\d+\.\d+\.\d+ \(tenant acme\)$/);
    const last = sent[sent.length - 1];
    expect(last.url).toBe(`${server.url}/api/v1/status/buildinfo`);
    expect(last.headers['X-Scope-OrgID']).toBe('acme');
    expect(last.headers.Authorization).toBe('Bearer ');
  });

  it('searches LLM traces by model and links them to the trace and token views', async () => {
    const ds = dataSource({ tenant: 'acme' });
    const res = await ds.query(request([{ refId: 'A', queryType: QueryType.TraceSearch, model: 'gpt-4o' }]));
    expect(res.errors).toBeUndefined();
    const [frame] = res.data as DataFrame[];
    expect(field(frame, 'traceID')).toEqual([TRACE_HALLUCINATED]);
    expect(field(frame, 'model')).toEqual(['gpt-4o']);
    expect(field(frame, 'provider')).toEqual(['openai']);
    expect(field(frame, 'input tokens')).toEqual([120]);
    expect(field(frame, 'status')).toEqual(['error']);
    expect(field(frame, 'service')).toEqual(['chat-api']);
    expect(field(frame, 'duration')).toEqual([3000]);
    expect(field(frame, 'spans')).toEqual([3]);
    expect(field(frame, 'spanID')).toEqual([LLM_SPAN_HALLUCINATED]);
    const link = frame.fields.find((f) => f.name === 'traceID')!.config.links![0];
    expect(link.internal?.query).toMatchObject({ queryType: QueryType.Trace, traceId: '${__value.raw}' });
    expect(link.internal?.datasourceUid).toBe('sightline-contract');
  });

  it('filters traces by GenAI quality, status, duration and attributes', async () => {
    const ds = dataSource({ tenant: 'acme' });
    const ids = async (q: object) => {
      const res = await ds.query(request([{ refId: 'A', queryType: QueryType.TraceSearch, ...q }]));
      expect(res.errors).toBeUndefined();
      return [...field((res.data as DataFrame[])[0], 'traceID')].sort();
    };
    expect(await ids({})).toEqual([TRACE_HALLUCINATED, TRACE_GROUNDED, TRACE_SLOW].sort());
    expect(await ids({ minHallucination: 0.5 })).toEqual([TRACE_HALLUCINATED]);
    expect(await ids({ status: 'error' })).toEqual([TRACE_HALLUCINATED]);
    expect(await ids({ minDuration: '4s' })).toEqual([TRACE_SLOW]);
    expect(await ids({ attrs: ['user.id=u-42'] })).toEqual([TRACE_HALLUCINATED, TRACE_SLOW].sort());
    expect(await ids({ provider: 'openai', attrs: ['gen_ai.request.model=~gpt-.*'] })).toEqual([TRACE_HALLUCINATED, TRACE_SLOW].sort());
    // All conditions hold on one span: the user is on the root span, the provider on the LLM call.
    expect(await ids({ provider: 'openai', attrs: ['user.id=u-42'] })).toEqual([]);
    expect(await ids({ service: 'llm-gw', model: 'claude-sonnet-4' })).toEqual([TRACE_GROUNDED]);
    // Other tenants see nothing.
    const other = dataSource({ tenant: 'other' });
    const res = await other.query(request([{ refId: 'A', queryType: QueryType.TraceSearch }]));
    expect(field((res.data as DataFrame[])[0], 'traceID')).toEqual([]);
  });

  it('returns one trace as a trace frame for the trace view', async () => {
    const res = await dataSource({ tenant: 'acme' }).query(
      request([{ refId: 'T', queryType: QueryType.Trace, traceId: TRACE_HALLUCINATED }])
    );
    expect(res.errors).toBeUndefined();
    const [frame] = res.data as DataFrame[];
    expect(frame.meta?.preferredVisualisationType).toBe('trace');
    expect(field(frame, 'spanID')).toEqual(['5a00000000000001', '5a00000000000002', LLM_SPAN_HALLUCINATED]);
    expect(field(frame, 'parentSpanID')).toEqual([undefined, '5a00000000000001', '5a00000000000001']);
    expect(field(frame, 'serviceName')).toEqual(['chat-api', 'retriever', 'llm-gw']);
    expect(field(frame, 'operationName')).toEqual(['POST /chat', 'retrieve', 'chat gpt-4o']);
    expect(field(frame, 'startTime')).toEqual([(BASE_S + 600) * 1000, (BASE_S + 600) * 1000 + 20, (BASE_S + 600) * 1000 + 200]);
    expect(field(frame, 'duration')).toEqual([3000, 160, 2500]);
    expect(field(frame, 'statusCode')).toEqual([0, 0, 2]);
    expect(field(frame, 'statusMessage')[2]).toBe('upstream failed');
    const tags = field(frame, 'tags')[2] as Array<{ key: string; value: unknown }>;
    const tag = (k: string) => tags.find((t) => t.key === k)?.value;
    expect(tag('gen_ai.request.model')).toBe('gpt-4o');
    expect(tag('gen_ai.usage.input_tokens')).toBe(120);
    expect(tag('sightline.quality.hallucination_index')).toBeGreaterThan(0.5);
    expect(tag('sightline.quality.entropy_mean')).toBeGreaterThan(0);
    expect(tag('sightline.critical_path')).toBe(true);
    const logs = field(frame, 'logs')[2] as Array<{ name: string; timestamp: number }>;
    expect(logs).toEqual([{ name: 'gen_ai.request.sent', timestamp: (BASE_S + 600) * 1000 + 250, fields: [{ key: 'attempt', value: 1 }] }]);
    expect(field(frame, 'serviceTags')[0]).toContainEqual({ key: 'deployment.environment', value: 'contract-test' });
  });

  it('keeps span links as trace-view references', async () => {
    const res = await dataSource({ tenant: 'acme' }).query(request([{ refId: 'T', queryType: QueryType.Trace, traceId: TRACE_SLOW }]));
    expect(res.errors).toBeUndefined();
    const [frame] = res.data as DataFrame[];
    expect(field(frame, 'references')[0]).toEqual([
      { traceID: TRACE_HALLUCINATED, spanID: '5a00000000000001', tags: [{ key: 'link.reason', value: 'follow-up' }] },
    ]);
    expect(field(frame, 'references')[1]).toEqual([]);
  });

  it('explains a bad trace id before sending anything', async () => {
    const before = sent.length;
    const res = await dataSource({ tenant: 'acme' }).query(request([{ refId: 'T', queryType: QueryType.Trace, traceId: 'xyz' }]));
    expect(res.errors?.[0].message).toMatch(/trace id must be 1 to 32 hex digits/);
    expect(sent.length).toBe(before);
  });

  it('reports an unknown trace with the server message', async () => {
    const res = await dataSource({ tenant: 'acme' }).query(
      request([{ refId: 'T', queryType: QueryType.Trace, traceId: 'ffffffffffffffffffffffffffffffff' }])
    );
    expect(res.errors?.[0].message).toMatch(/^Sightline answered 404: /);
  });

  it('finds the quality -> conversion Granger edge and draws it as a node graph', async () => {
    const res = await dataSource({ tenant: 'acme' }).query(
      request([
        {
          refId: 'G',
          queryType: QueryType.Granger,
          causes: ['answer_quality', 'unrelated_noise'],
          effects: ['conversion_rate'],
          maxLag: 3,
        },
      ])
    );
    expect(res.errors).toBeUndefined();
    const [table, nodes, edges] = res.data as DataFrame[];
    expect(field(table, 'cause')).toEqual(['answer_quality', 'unrelated_noise']);
    expect(field(table, 'lag')[0]).toBe(1);
    expect(field(table, 'significant')).toEqual([true, false]);
    const p = field(table, 'p') as number[];
    expect(p[0]).toBeLessThan(1e-6);
    expect(field(table, 'q (BH)')).toEqual(benjaminiHochberg(p));
    expect(field(table, 'observations')).toEqual([120, 120]);
    expect(nodes.meta?.preferredVisualisationType).toBe('nodeGraph');
    expect(field(nodes, 'title')).toEqual(['answer_quality', 'conversion_rate', 'unrelated_noise']);
    expect(field(edges, 'source')).toEqual(['n0']);
    expect(field(edges, 'target')).toEqual(['n1']);
    expect(field(edges, 'mainstat')).toEqual(['lag 1']);
  });

  it('keeps Granger pairs the server refuses as rows with the reason', async () => {
    const res = await dataSource({ tenant: 'acme' }).query(
      request([{ refId: 'G', queryType: QueryType.Granger, causes: ['no_such_metric'], effects: ['conversion_rate'], maxLag: 2 }])
    );
    expect(res.errors).toBeUndefined();
    const [table, , edges] = res.data as DataFrame[];
    expect(field(table, 'error')[0]).toMatch(/^Sightline answered 400: .*exactly one series/);
    expect(field(table, 'significant')).toEqual([false]);
    expect(field(edges, 'id')).toEqual([]);
  });

  it('draws a detector band with its anomaly from the series the detector wrote', async () => {
    const res = await dataSource({ tenant: 'acme' }).query(
      request([{ refId: 'B', queryType: QueryType.Anomalies, detector: 'latency_guard', step: '1m' }])
    );
    expect(res.errors).toBeUndefined();
    const frames = res.data as DataFrame[];
    expect(frames).toHaveLength(1);
    const [frame] = frames;
    const series = metricSeries();
    expect(field(frame, 'Time')).toHaveLength(series['latency_guard:predicted'].length);
    expect(field(frame, 'predicted')).toEqual(series['latency_guard:predicted']);
    expect(field(frame, 'upper')).toEqual(series['latency_guard:upper']);
    expect(frame.fields.find((f) => f.name === 'upper')!.config.custom.fillBelowTo).toBe(
      frame.fields.find((f) => f.name === 'lower')!.config.displayNameFromDS
    );
    const flagged = series['latency_guard:anomalous'].flatMap((v, i) => (v ? [i] : []));
    expect(flagged).toContain(ANOMALY_AT);
    const anomalies = field(frame, 'anomaly');
    expect(anomalies.flatMap((v, i) => (v !== null ? [i] : []))).toEqual(flagged);
    // The detector's spec is unknown here (no such detector), so marks sit on the forecast.
    expect(anomalies[ANOMALY_AT]).toBe(series['latency_guard:predicted'][ANOMALY_AT]);
    expect(field(frame, 'likelihood')).toEqual(series['latency_guard:likelihood']);
  });

  it('lists models, services and providers as template variables', async () => {
    const ds = dataSource({ tenant: 'acme' });
    const texts = async (q: string) => (await ds.metricFindQuery(q)).map((v) => v.text);
    expect(await texts('models()')).toEqual(['claude-sonnet-4', 'gpt-4o', 'gpt-4o-mini']);
    expect(await texts('services()')).toEqual(['chat-api', 'llm-gw', 'retriever']);
    expect(await texts('providers')).toEqual(['anthropic', 'openai']);
    await expect(ds.metricFindQuery('users()')).rejects.toThrow(/unknown variable query/);
  });

  it('shows LLM quality by model (once /api/v1/quality exists)', async () => {
    if (!(await hasEndpoint(server, '/api/v1/quality?metric=hallucination_index&by=model', 'quality query'))) {
      return;
    }
    const res = await dataSource({ tenant: 'acme' }).query(
      request([{ refId: 'Q', queryType: QueryType.Quality, metric: 'hallucination_index', by: 'model', step: '10m' }])
    );
    expect(res.errors).toBeUndefined();
    const frames = res.data as DataFrame[];
    const byName = new Map(frames.map((f) => [f.name, f]));
    const values = (name: string) => (field(byName.get(name)!, 'hallucination_index') as Array<number | null>).filter((v) => v !== null);
    expect(values('gpt-4o')[0]).toBeGreaterThan(0.5);
    expect(values('claude-sonnet-4')[0]).toBeLessThan(values('gpt-4o')[0] as number);
  });

  it('shows the tokens of one response (once /api/v1/quality/tokens exists)', async () => {
    const path = `/api/v1/quality/tokens?trace_id=${TRACE_HALLUCINATED}&span_id=${LLM_SPAN_HALLUCINATED}`;
    if (!(await hasEndpoint(server, path, 'tokens query'))) {
      return;
    }
    const res = await dataSource({ tenant: 'acme' }).query(
      request([{ refId: 'K', queryType: QueryType.Tokens, traceId: TRACE_HALLUCINATED, spanId: LLM_SPAN_HALLUCINATED }])
    );
    expect(res.errors).toBeUndefined();
    const [frame] = res.data as DataFrame[];
    expect(field(frame, 'token')).toEqual(HALLUCINATED_LOGPROBS.content.map((t) => t.token));
    expect(field(frame, 'logprob')).toEqual(HALLUCINATED_LOGPROBS.content.map((t) => t.logprob));
    const entropy = field(frame, 'entropy') as number[];
    // " Spain" hesitated between three candidates; "Paris" did not.
    expect(entropy[3]).toBeGreaterThan(entropy[0]);
  });

  it('runs a detector and shows its bands and events (once /api/v1/detectors exists)', async () => {
    if (!(await hasEndpoint(server, '/api/v1/detectors', 'detector round trip'))) {
      return;
    }
    const ds = dataSource({ tenant: 'acme' });
    const now = Math.floor(Date.now() / 60_000) * 60;
    const live = metricsBody(now - 6 * 3600, 'live_latency');
    await server.ingest('metrics', live, { 'X-Scope-OrgID': 'acme' });
    const spec = {
      name: 'live_guard',
      query: 'live_latency',
      step: '60s',
      history: '1d',
      horizon: 6,
      lookback: 30,
      model: { kind: 'zscore' },
      direction: 'both',
      alpha: 0.01,
      // The series carries one spiked point: alert on a single breach.
      sustain: { window: 1, min_points: 1, recovery: 1 },
      max_series: 10,
    };
    const create = await ds.send({ method: 'POST', path: '/api/v1/detectors', data: spec });
    expect(create).toMatchObject({ name: 'live_guard' });
    await ds.send({ method: 'POST', path: '/api/v1/detectors/live_guard/run' });
    let state = '';
    for (let i = 0; i < 120 && state !== 'ready' && state !== 'failed'; i++) {
      await new Promise((r) => setTimeout(r, 500));
      const all = (await ds.send({ method: 'GET', path: '/api/v1/detectors' })) as {
        detectors: Array<{ name: string; status: { state: string } }>;
      };
      state = all.detectors.find((d) => d.name === 'live_guard')?.status.state ?? '';
    }
    expect(state).toBe('ready');
    expect((await ds.metricFindQuery('detectors()')).map((v) => v.text)).toContain('live_guard');
    const from = (now - 6 * 3600) * 1000;
    const to = now * 1000;
    const req = request([
      { refId: 'B', queryType: QueryType.Anomalies, detector: 'live_guard', step: '1m' },
      { refId: 'E', queryType: QueryType.AnomalyEvents, detector: 'live_guard' },
    ]);
    req.range = { from: dateTime(from), to: dateTime(to), raw: { from: dateTime(from), to: dateTime(to) } };
    const res = await ds.query(req);
    expect(res.errors).toBeUndefined();
    const bands = (res.data as DataFrame[]).filter((f) => f.refId === 'B');
    expect(bands.length).toBeGreaterThan(0);
    expect((field(bands[0], 'predicted') as unknown[]).some((v) => v !== null)).toBe(true);
    expect((field(bands[0], 'value') as unknown[]).some((v) => v !== null)).toBe(true);
    // the server writes the likelihood score next to the band: 0..1 on every scored step
    const likelihood = (field(bands[0], 'likelihood') as Array<number | null>).filter((v) => v !== null);
    expect(likelihood.length).toBeGreaterThan(0);
    expect(likelihood.every((v) => v! >= 0 && v! <= 1)).toBe(true);
    const events = (res.data as DataFrame[]).find((f) => f.refId === 'E')!;
    expect(events.fields.map((f) => f.name)).toEqual(['time', 'timeEnd', 'title', 'text', 'tags']);
    expect(events.length).toBeGreaterThan(0);
  });

  it('answers every plugin query of the provisioned dashboards', async () => {
    const vars = {
      model: 'gpt-4o',
      // The detector the round-trip test above created and ran (its events feed the annotations).
      detector: 'live_guard',
      trace_id: TRACE_HALLUCINATED,
      span_id: LLM_SPAN_HALLUCINATED,
      cause: 'answer_quality',
      effect: 'conversion_rate',
    };
    const quality = await hasEndpoint(server, '/api/v1/quality?metric=hallucination_index&by=model', 'dashboard quality panels');
    const tokens = await hasEndpoint(server, `/api/v1/quality/tokens?trace_id=${TRACE_HALLUCINATED}&span_id=${LLM_SPAN_HALLUCINATED}`, 'dashboard token panel');
    const annotations = await hasEndpoint(server, '/api/v1/annotations', 'dashboard annotations');
    const ds = dataSource({ tenant: 'acme' });
    let ran = 0;
    for (const { file, dashboard } of dashboards()) {
      const targets = dashboard.panels
        .filter((p) => p.datasource.uid === 'sightline')
        .flatMap((p) => p.targets.map((t) => ({ panel: p.title, q: substitute(t as unknown as SightlineQuery, vars) })));
      for (const a of dashboard.annotations.list.filter((x) => x.datasource.uid === 'sightline')) {
        targets.push({ panel: `annotation ${a.name}`, q: a.target! });
      }
      for (const { panel, q } of targets) {
        if ((q.queryType === QueryType.Quality && !quality) || (q.queryType === QueryType.Tokens && !tokens) || (q.queryType === QueryType.AnomalyEvents && !annotations)) {
          continue;
        }
        const req = request([q]);
        if (q.queryType === QueryType.AnomalyEvents || q.queryType === QueryType.Anomalies) {
          // live_guard ran over the last hours, not the fixed range of the other panels.
          const from = dateTime(Date.now() - 7 * 3600_000);
          const to = dateTime(Date.now());
          req.range = { from, to, raw: { from, to } };
        }
        const res = await ds.query(req);
        expect({ file, panel, errors: res.errors }).toEqual({ file, panel, errors: undefined });
        const rows = (res.data as DataFrame[]).reduce((n, f) => n + f.length, 0);
        expect({ file, panel, rows: rows > 0 }).toEqual({ file, panel, rows: true });
        ran++;
      }
    }
    expect(ran).toBeGreaterThanOrEqual(4);
  });

  it('sends every request through the plugin route to the configured URL', () => {
    expect(sent.length).toBeGreaterThan(10);
    for (const s of sent) {
      expect(s.url.startsWith(`${server.url}/api/`)).toBe(true);
      expect(s.url).not.toContain(PROXY_PREFIX);
    }
  });
});

run('plugin against a real sightline (auth on)', () => {
  let server: SightlineServer;

  beforeAll(async () => {
    server = await SightlineServer.start('s3cret team-a\n');
    await server.ingest('traces', tracesBody(), { Authorization: 'Bearer s3cret' });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('explains a wrong token in the health check', async () => {
    backend = proxiedBackendSrv({ url: server.url, secureJsonData: { token: 'wrong' } });
    const res = await dataSource().testDatasource();
    expect(res.status).toBe('error');
    expect(res.message).toMatch(/401/);
    expect(res.message).toMatch(/bearer token/);
  });

  it('reads the token tenant data with the right token', async () => {
    backend = proxiedBackendSrv({ url: server.url, secureJsonData: { token: 's3cret' } });
    const ds = dataSource();
    expect((await ds.testDatasource()).status).toBe('success');
    const res = await ds.query(request([{ refId: 'A', queryType: QueryType.TraceSearch }]));
    expect(res.errors).toBeUndefined();
    expect(field((res.data as DataFrame[])[0], 'traceID')).toHaveLength(3);
  });
});
