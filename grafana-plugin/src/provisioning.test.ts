import pluginJson from './plugin.json';
import * as rq from './api/requests';
import { RANGE } from './contract/otlp';
import { dashboards, provisionedDatasources, substitute } from './test/dashboards';
import { QueryType, SightlineQuery } from './types';
import { parseVariableQuery } from './variables';

const SAMPLE_VARS = {
  model: 'gpt-4o',
  detector: 'latency_guard',
  trace_id: '0a0102030405060708090a0b0c0d0e0f',
  span_id: '5a00000000000003',
  cause: 'avg(hallucination_index)',
  effect: 'avg(conversion_rate)',
};

/** What the datasource would send for a plugin target (throws for an invalid one). */
function build(q: SightlineQuery): unknown {
  switch (q.queryType) {
    case QueryType.Quality:
      return rq.qualityRequest(q, RANGE);
    case QueryType.Anomalies:
      return rq.anomalyBandRequest(q, RANGE);
    case QueryType.AnomalyEvents:
      return rq.annotationsRequest(q, RANGE);
    case QueryType.Granger:
      return rq.grangerRequests(q, RANGE);
    case QueryType.TraceSearch:
      return rq.traceSearchRequest(q, RANGE);
    case QueryType.Trace:
      return rq.traceRequest(q);
    case QueryType.Tokens:
      return rq.tokensRequest(q);
    default:
      throw new Error(`unknown query type ${String(q.queryType)}`);
  }
}

describe('provisioning', () => {
  const sources = provisionedDatasources();
  const all = dashboards();

  it('provisions the plugin and Sightline as Prometheus, Tempo and Loki', () => {
    expect([...sources.entries()].sort()).toEqual([
      ['sightline', pluginJson.id],
      ['sightline-loki', 'loki'],
      ['sightline-prometheus', 'prometheus'],
      ['sightline-tempo', 'tempo'],
    ]);
  });

  it('has the three dashboards with unique uids', () => {
    expect(all.map((d) => d.dashboard.title).sort()).toEqual(['Causality', 'LLM overview', 'Quality & anomalies']);
    expect(new Set(all.map((d) => d.dashboard.uid)).size).toBe(all.length);
  });

  describe.each(dashboards().map((d) => [d.file, d.dashboard] as const))('%s', (_file, dashboard) => {
    it('lays panels out on the 24-column grid without overlaps', () => {
      const cells = new Set<string>();
      expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
      for (const p of dashboard.panels) {
        expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
        for (let x = p.gridPos.x; x < p.gridPos.x + p.gridPos.w; x++) {
          for (let y = p.gridPos.y; y < p.gridPos.y + p.gridPos.h; y++) {
            expect(cells.has(`${x},${y}`)).toBe(false);
            cells.add(`${x},${y}`);
          }
        }
      }
    });

    it('uses only provisioned datasources, with their types', () => {
      for (const p of dashboard.panels) {
        expect(sources.get(p.datasource.uid)).toBe(p.datasource.type);
        for (const t of p.targets) {
          expect(t.datasource).toEqual(p.datasource);
        }
      }
      for (const v of dashboard.templating.list.filter((x) => x.type === 'query')) {
        expect(sources.has(v.datasource!.uid)).toBe(true);
      }
    });

    it('has plugin queries, variables and annotations the plugin accepts', () => {
      const pluginTargets = dashboard.panels
        .filter((p) => p.datasource.uid === 'sightline')
        .flatMap((p) => p.targets.map((t) => substitute(t as unknown as SightlineQuery, SAMPLE_VARS)));
      expect(pluginTargets.length).toBeGreaterThan(0);
      for (const t of pluginTargets) {
        expect(() => build(t)).not.toThrow();
      }
      for (const v of dashboard.templating.list.filter((x) => x.type === 'query')) {
        expect(() => parseVariableQuery(v.query)).not.toThrow();
      }
      for (const a of dashboard.annotations.list.filter((x) => x.datasource.uid === 'sightline')) {
        expect(a.target?.queryType).toBe(QueryType.AnomalyEvents);
        expect(() => build(a.target!)).not.toThrow();
      }
    });

    it('has non-empty queries for the built-in datasources', () => {
      for (const p of dashboard.panels.filter((x) => x.datasource.uid !== 'sightline')) {
        for (const t of p.targets) {
          expect(String(t.expr ?? t.query ?? '').trim()).not.toBe('');
        }
      }
    });
  });

  it('substitutes every variable form', () => {
    expect(substitute({ refId: 'A', model: '${model:regex}', causes: ['avg(x{m="$model"})'], maxLag: 3 }, { model: 'm1' })).toEqual({
      refId: 'A',
      model: 'm1',
      causes: ['avg(x{m="m1"})'],
      maxLag: 3,
    });
  });
});
