/**
 * @jest-environment node
 */
/**
 * Records the fixtures of the unit tests from a real server: `npm run record-fixtures` (binary
 * from SIGHTLINE_BIN, default the workspace's debug build). Each fixture holds the request the
 * plugin's builder made and the server's status and body, so the unit tests check both the
 * request building and the mapping of a real answer. Not part of `npm test` (its match pattern
 * excludes this file).
 */
import fs from 'fs';
import path from 'path';

import * as rq from '../api/requests';
import { QueryType } from '../types';
import { LLM_SPAN_HALLUCINATED, metricsBody, RANGE, TRACE_HALLUCINATED, tracesBody } from './otlp';
import { queryString } from '../api/requests';
import { SightlineServer } from './server';

const DIR = path.resolve(__dirname, '..', '__fixtures__', 'recorded');
jest.setTimeout(60_000);

async function record(
  server: SightlineServer,
  name: string,
  req: rq.ApiRequest,
  headers: Record<string, string>,
  onlyIfServed = false
) {
  const r = await fetch(`${server.url}${req.path}${queryString(req.params)}`, {
    method: req.method,
    headers: { ...headers, ...(req.data ? { 'Content-Type': 'application/json' } : {}) },
    body: req.data ? JSON.stringify(req.data) : undefined,
  });
  const text = await r.text();
  if (onlyIfServed && r.status === 404) {
    return; // endpoint not on this server yet: the contract fixture stays
  }
  const fixture = { request: req, status: r.status, body: text ? JSON.parse(text) : null };
  fs.writeFileSync(path.join(DIR, `${name}.json`), `${JSON.stringify(fixture, null, 2)}\n`);
}

it('records fixtures from a real sightline serve', async () => {
  fs.mkdirSync(DIR, { recursive: true });
  const server = await SightlineServer.start();
  const auth = await SightlineServer.start('s3cret team-a\n');
  try {
    const h = { 'X-Scope-OrgID': 'acme' };
    await server.ingest('traces', tracesBody(), h);
    await server.ingest('metrics', metricsBody(), h);
    const q = (extra: object) => ({ refId: 'A', ...extra });
    await record(server, 'buildinfo', rq.buildInfoRequest(), h);
    await record(auth, 'buildinfo-401', rq.buildInfoRequest(), { Authorization: 'Bearer wrong' });
    await record(server, 'traces-search-gpt-4o', rq.traceSearchRequest(q({ model: 'gpt-4o' }), RANGE), h);
    await record(server, 'traces-search-all', rq.traceSearchRequest(q({}), RANGE), h);
    await record(server, 'trace', rq.traceRequest(q({ traceId: TRACE_HALLUCINATED })), h);
    await record(server, 'trace-404', rq.traceRequest(q({ traceId: 'ffffffffffffffffffffffffffffffff' })), h);
    const granger = rq.grangerRequests(
      q({ queryType: QueryType.Granger, causes: ['answer_quality', 'unrelated_noise', 'no_such_metric'], effects: ['conversion_rate'], maxLag: 3 }),
      RANGE,
      60_000
    );
    await record(server, 'granger-quality-conversion', granger[0].request, h);
    await record(server, 'granger-noise-conversion', granger[1].request, h);
    await record(server, 'granger-400', granger[2].request, h);
    await record(server, 'query-range-bands', rq.anomalyBandRequest(q({ detector: 'latency_guard', step: '1m' }), RANGE), h);
    await record(server, 'query-range-source', rq.rangeQueryRequest('chat_latency', RANGE, 60_000), h);
    await record(server, 'tag-values-model', rq.tagValuesRequest('gen_ai.request.model'), h);
    await record(server, 'quality-values-404', rq.qualityValuesRequest('model'), h);
    // Endpoints still being built: recorded once the server has them (they replace the
    // contract fixtures of the same name; see src/__fixtures__/README.md).
    const tokens = rq.tokensRequest(q({ traceId: TRACE_HALLUCINATED, spanId: LLM_SPAN_HALLUCINATED }));
    await record(server, 'quality-tokens', tokens, h, true);
    await record(server, 'quality-values-model', rq.qualityValuesRequest('model'), h, true);
    const quality = rq.qualityRequest(q({ metric: 'hallucination_index', by: 'model', step: '10m' }), RANGE);
    await record(server, 'quality', quality, h, true);
    await record(server, 'detectors', rq.detectorsRequest(), h, true);
    await record(server, 'annotations', rq.annotationsRequest(q({ detector: 'latency_guard' }), RANGE), h, true);
  } finally {
    await server.stop();
    await auth.stop();
  }
});
