/**
 * Runs one query: builds its requests, sends them through a `Transport`, maps the answers to
 * frames. Independent of Grafana's runtime, so the contract test drives exactly this code
 * against a real `sightline serve`.
 */
import { DataFrame } from '@grafana/data';

import * as rq from './api/requests';
import {
  AnnotationEvent,
  Detector,
  GrangerResponse,
  PromMatrix,
  QualityResponse,
  TokensResponse,
  TraceResponse,
  TraceSearchResponse,
  unwrap,
} from './api/responses';
import { HttpError, isNotFound, Transport } from './api/transport';
import { annotationFrame, bandFrames } from './frames/anomalies';
import { GrangerOutcome, grangerNodeGraph, grangerTable } from './frames/granger';
import { qualityFrames } from './frames/quality';
import { tokensFrame } from './frames/tokens';
import { DatasourceRef, traceFrame, traceSearchFrame } from './frames/traces';
import { QueryType, SightlineQuery } from './types';

/** Significance level of Granger edges (after Benjamini-Hochberg). */
export const GRANGER_ALPHA = 0.05;

export interface RunContext {
  range: rq.RangeMs;
  /** The panel's interval, used when a query has no step of its own. */
  intervalMs?: number;
  send: Transport;
  /** This datasource, for links from search results to traces and tokens. */
  ds?: DatasourceRef;
}

export async function runQuery(q: SightlineQuery, ctx: RunContext): Promise<DataFrame[]> {
  const refId = q.refId;
  switch (q.queryType ?? QueryType.Quality) {
    case QueryType.Quality: {
      const body = await ctx.send(rq.qualityRequest(q, ctx.range, ctx.intervalMs));
      return qualityFrames(unwrap<QualityResponse>(body), refId);
    }
    case QueryType.Anomalies:
      return runAnomalies(q, ctx);
    case QueryType.AnomalyEvents: {
      const body = await ctx.send(rq.annotationsRequest(q, ctx.range));
      return [annotationFrame(unwrap<AnnotationEvent[]>(body), refId)];
    }
    case QueryType.Granger:
      return runGranger(q, ctx);
    case QueryType.TraceSearch: {
      const body = await ctx.send(rq.traceSearchRequest(q, ctx.range));
      return [traceSearchFrame(unwrap<TraceSearchResponse>(body), refId, ctx.ds)];
    }
    case QueryType.Trace: {
      const body = await ctx.send(rq.traceRequest(q));
      return [traceFrame(unwrap<TraceResponse>(body), refId)];
    }
    case QueryType.Tokens: {
      const body = await ctx.send(rq.tokensRequest(q));
      return [tokensFrame(unwrap<TokensResponse>(body), refId)];
    }
    default:
      throw new rq.QueryError(`unknown query type "${String(q.queryType)}"`);
  }
}

/**
 * The detector's band series, and its source series for the actual values. A detector that
 * cannot be described (older server, deleted since) still shows its bands.
 */
async function runAnomalies(q: SightlineQuery, ctx: RunContext): Promise<DataFrame[]> {
  const bandReq = rq.anomalyBandRequest(q, ctx.range, ctx.intervalMs);
  const detector = q.detector!.trim();
  const [bands, spec] = await Promise.all([
    ctx.send(bandReq).then((b) => unwrap<PromMatrix>(b).result),
    ctx.send(rq.detectorRequest(detector)).then(
      (b) => unwrap<Detector>(b),
      (e) => {
        if (isNotFound(e)) {
          return undefined;
        }
        throw e;
      }
    ),
  ]);
  let actual: PromMatrix['result'] = [];
  if (spec?.query) {
    const step = Number(bandReq.params!.step) * 1000;
    actual = unwrap<PromMatrix>(await ctx.send(rq.rangeQueryRequest(spec.query, ctx.range, step))).result;
  }
  return bandFrames(detector, bands, actual, q.refId);
}

/** Every cause x effect pair; a pair the server refuses becomes a row with its error. */
async function runGranger(q: SightlineQuery, ctx: RunContext): Promise<DataFrame[]> {
  const pairs = rq.grangerRequests(q, ctx.range, ctx.intervalMs);
  const outcomes: GrangerOutcome[] = await Promise.all(
    pairs.map(async (p) => {
      try {
        return { cause: p.cause, effect: p.effect, response: unwrap<GrangerResponse>(await ctx.send(p.request)) };
      } catch (e) {
        if (e instanceof HttpError && e.status >= 400 && e.status < 500 && e.status !== 401) {
          return { cause: p.cause, effect: p.effect, error: e.message };
        }
        throw e;
      }
    })
  );
  return [grangerTable(outcomes, GRANGER_ALPHA, q.refId), ...grangerNodeGraph(outcomes, GRANGER_ALPHA, q.refId)];
}
