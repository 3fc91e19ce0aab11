/**
 * Granger results -> an edges table and the node-graph frame pair (nodes, edges).
 *
 * Each cause x effect pair is one `/api/v1/detect/granger` answer. The lag reported is the one
 * the server selected by AIC; its SSR F-test p-value is adjusted across the pairs of one query
 * with Benjamini-Hochberg (many pairs tested at once inflate false discoveries), and an edge is
 * significant when the adjusted value is under `alpha`.
 */
import { createDataFrame, DataFrame, FieldType } from '@grafana/data';

import { GrangerResponse } from '../api/responses';

/** The outcome of one pair: the server's answer, or why it failed (constant series, ...). */
export interface GrangerOutcome {
  cause: string;
  effect: string;
  response?: GrangerResponse;
  error?: string;
}

interface Row {
  cause: string;
  effect: string;
  lag: number | null;
  f: number | null;
  p: number | null;
  q: number | null;
  partialR2: number | null;
  nobs: number | null;
  differenced: number | null;
  error: string;
}

/** Benjamini-Hochberg adjusted p-values (same order as the input; nulls stay null). */
export function benjaminiHochberg(ps: Array<number | null>): Array<number | null> {
  const idx = ps.map((p, i) => [p, i] as const).filter((x): x is readonly [number, number] => x[0] !== null);
  idx.sort((a, b) => a[0] - b[0]);
  const m = idx.length;
  const out: Array<number | null> = ps.map(() => null);
  let running = 1;
  for (let k = m - 1; k >= 0; k--) {
    const [p, i] = idx[k];
    running = Math.min(running, (p * m) / (k + 1));
    out[i] = running;
  }
  return out;
}

function toRows(outcomes: GrangerOutcome[]): Row[] {
  const rows: Row[] = outcomes.map((o) => {
    const r = o.response;
    const lag = r ? (r.lags.find((l) => l.lag === r.selected_lag.aic) ?? r.lags[0]) : undefined;
    return {
      cause: o.cause,
      effect: o.effect,
      lag: lag?.lag ?? null,
      f: lag?.ssr_ftest.F ?? null,
      p: lag?.ssr_ftest.p ?? null,
      q: null,
      partialR2: lag?.partial_r2 ?? null,
      nobs: r?.nobs ?? null,
      differenced: r?.differenced ?? null,
      error: o.error ?? (r && !lag ? 'no lag tested' : ''),
    };
  });
  const qs = benjaminiHochberg(rows.map((r) => r.p));
  rows.forEach((r, i) => (r.q = qs[i]));
  return rows;
}

/** The edges table: one row per pair, strongest first. */
export function grangerTable(outcomes: GrangerOutcome[], alpha: number, refId: string): DataFrame {
  const rows = toRows(outcomes).sort((a, b) => (a.q ?? 2) - (b.q ?? 2));
  return createDataFrame({
    refId,
    name: 'granger',
    meta: { preferredVisualisationType: 'table' },
    fields: [
      { name: 'cause', type: FieldType.string, values: rows.map((r) => r.cause) },
      { name: 'effect', type: FieldType.string, values: rows.map((r) => r.effect) },
      { name: 'lag', type: FieldType.number, values: rows.map((r) => r.lag) },
      { name: 'F', type: FieldType.number, values: rows.map((r) => r.f), config: { decimals: 2 } },
      { name: 'p', type: FieldType.number, values: rows.map((r) => r.p), config: { unit: 'sci' } },
      { name: 'q (BH)', type: FieldType.number, values: rows.map((r) => r.q), config: { unit: 'sci' } },
      { name: 'partial R²', type: FieldType.number, values: rows.map((r) => r.partialR2), config: { decimals: 3 } },
      { name: 'significant', type: FieldType.boolean, values: rows.map((r) => r.q !== null && r.q < alpha) },
      { name: 'observations', type: FieldType.number, values: rows.map((r) => r.nobs) },
      { name: 'differenced', type: FieldType.number, values: rows.map((r) => r.differenced) },
      { name: 'error', type: FieldType.string, values: rows.map((r) => r.error) },
    ],
  });
}

/** Node graph frames: every query is a node, every significant pair an edge cause -> effect. */
export function grangerNodeGraph(outcomes: GrangerOutcome[], alpha: number, refId: string): DataFrame[] {
  const rows = toRows(outcomes);
  const ids = new Map<string, string>();
  const role = new Map<string, Set<string>>();
  const nodeId = (query: string, r: 'cause' | 'effect') => {
    if (!ids.has(query)) {
      ids.set(query, `n${ids.size}`);
      role.set(query, new Set());
    }
    role.get(query)!.add(r);
    return ids.get(query)!;
  };
  const edges = rows.flatMap((r) => {
    const source = nodeId(r.cause, 'cause');
    const target = nodeId(r.effect, 'effect');
    return r.q !== null && r.q < alpha ? [{ ...r, source, target }] : [];
  });
  const queries = [...ids.keys()];
  const out = (q: string) => edges.filter((e) => e.cause === q).length;
  const inc = (q: string) => edges.filter((e) => e.effect === q).length;
  const meta = { preferredVisualisationType: 'nodeGraph' as const };
  const nodes = createDataFrame({
    refId,
    name: 'nodes',
    meta,
    fields: [
      { name: 'id', type: FieldType.string, values: queries.map((q) => ids.get(q)!) },
      { name: 'title', type: FieldType.string, values: queries },
      { name: 'subtitle', type: FieldType.string, values: queries.map((q) => [...role.get(q)!].sort().join(' & ')) },
      { name: 'mainstat', type: FieldType.number, values: queries.map(out), config: { displayName: 'causes' } },
      { name: 'secondarystat', type: FieldType.number, values: queries.map(inc), config: { displayName: 'caused by' } },
    ],
  });
  const edgeFrame = createDataFrame({
    refId,
    name: 'edges',
    meta,
    fields: [
      { name: 'id', type: FieldType.string, values: edges.map((e) => `${e.source}->${e.target}`) },
      { name: 'source', type: FieldType.string, values: edges.map((e) => e.source) },
      { name: 'target', type: FieldType.string, values: edges.map((e) => e.target) },
      { name: 'mainstat', type: FieldType.string, values: edges.map((e) => `lag ${e.lag}`) },
      { name: 'secondarystat', type: FieldType.number, values: edges.map((e) => e.q), config: { displayName: 'q', unit: 'sci' } },
      // Wider edges explain more of the effect (partial R² of the cause's lags, 0..1).
      { name: 'thickness', type: FieldType.number, values: edges.map((e) => 1 + 4 * (e.partialR2 ?? 0)) },
    ],
  });
  return [nodes, edgeFrame];
}
