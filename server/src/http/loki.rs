//! The Loki HTTP API subset Grafana's Loki datasource calls (see docs/logs.md for the stream
//! label model and every supported construct):
//!
//! * `GET|POST /loki/api/v1/query_range`: log queries -> `streams`, metric queries -> `matrix`;
//! * `GET|POST /loki/api/v1/query`: metric queries at one instant -> `vector` (the health
//!   check `vector(1)+vector(1)` answers 2);
//! * metadata in [`meta`]: `labels`, `label/{name}/values`, `series`, `index/stats`,
//!   `index/volume`, `index/volume_range`, `detected_labels`, `detected_fields`, `patterns`,
//!   `status/buildinfo`.
//!
//! Tenancy as everywhere (`X-Scope-OrgID` with auth off, bearer token with auth on). Errors are
//! Loki's: a plain-text body ([`super::ApiError`] rendered as text) with 400 for bad queries
//! and parameters, 401 for tenancy, 503 past the deadline, 500 when storage fails. Parsing and
//! evaluation run through the [`super::Runner`].

mod meta;

use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use sightline_query::QueryError;
use sightline_query::logs::Direction;
use sightline_query::logs::logql::eval::{QueryOutput, QueryValue, RangeParams, Series};
use sightline_query::logs::logql::{self, eval};
use sightline_query::time::{DurationDialect, TimeDialect};
use sightline_storage::{Deadline, TenantId};

use super::params::{self, get as param};
use super::{ApiError, AppState};

/// Default range of queries without `start`: one hour before `end`.
const DEFAULT_SPAN_NS: i64 = 3_600 * 1_000_000_000;
/// Loki's default `limit`.
const DEFAULT_LIMIT: usize = 100;

/// The routes of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/loki/api/v1/query_range",
            get(query_range).post(query_range),
        )
        .route("/loki/api/v1/query", get(query).post(query))
        .merge(meta::routes())
        .layer(axum::middleware::map_response(
            super::error::plain_text_errors,
        ))
}

/// Loki answers errors as plain text: the routes' [`ApiError`]s are re-rendered so.
pub(crate) type LokiError = ApiError;

pub(crate) fn bad(msg: impl std::fmt::Display) -> LokiError {
    ApiError::bad_data(msg.to_string())
}

pub(crate) fn query_err(e: QueryError) -> LokiError {
    match e {
        QueryError::Parse(m) => ApiError::bad_data(format!("parse error : {m}")),
        other => other.into(),
    }
}

/// Tenant and parameters of a request.
pub(crate) fn prepare(
    st: &AppState,
    method: &Method,
    headers: &HeaderMap,
    query: Option<&str>,
    body: &[u8],
) -> Result<(TenantId, Vec<(String, String)>), LokiError> {
    let tenant = super::request_tenant(st, headers)?;
    let p = params::collect(method, headers, query, body).map_err(bad)?;
    Ok((tenant, p))
}

/// Runs the parsing and evaluation through the runner and renders its JSON (or its error).
pub(crate) async fn run<F>(st: &AppState, tenant: &TenantId, work: F) -> Response
where
    F: FnOnce(&Deadline) -> Result<Value, LokiError> + Send + 'static,
{
    match st.run(tenant, work).await {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

/// A sample value as Prometheus and Loki print it.
pub(crate) fn fmt_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// A timestamp in seconds as a JSON number (Loki's matrix/vector form).
pub(crate) fn ts_seconds(ns: i64) -> Value {
    let secs = ns.div_euclid(1_000_000_000);
    let frac = ns.rem_euclid(1_000_000_000);
    if frac == 0 {
        Value::from(secs)
    } else {
        serde_json::Number::from_f64(secs as f64 + frac as f64 / 1e9)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

fn series_json(s: &Series, instant: bool) -> Value {
    if instant {
        let (t, v) = s.points.first().copied().unwrap_or((0, f64::NAN));
        json!({"metric": s.labels, "value": [ts_seconds(t), fmt_value(v)]})
    } else {
        json!({
            "metric": s.labels,
            "values": s.points.iter().map(|(t, v)| json!([ts_seconds(*t), fmt_value(*v)])).collect::<Vec<_>>(),
        })
    }
}

/// `data.stats` in Loki's shape (Grafana reads `summary`); storage pruning is added under
/// `sightline.explain`.
fn stats_json(out: &QueryOutput, started: Instant) -> Value {
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let s = &out.stats;
    let chunks = s.explain.segments_read + s.explain.memtable_batches;
    let store = json!({
        "totalChunksRef": chunks,
        "totalChunksDownloaded": chunks,
        "chunksDownloadTime": 0,
        "queryReferencedStructuredMetadata": false,
        "chunk": {
            "headChunkBytes": 0, "headChunkLines": 0,
            "decompressedBytes": s.bytes_processed, "decompressedLines": s.lines_processed,
            "compressedBytes": 0, "totalDuplicates": 0,
            "postFilterLines": s.entries_returned,
            "headChunkStructuredMetadataBytes": 0, "decompressedStructuredMetadataBytes": 0,
        },
    });
    json!({
        "summary": {
            "bytesProcessedPerSecond": (s.bytes_processed as f64 / secs) as u64,
            "linesProcessedPerSecond": (s.lines_processed as f64 / secs) as u64,
            "totalBytesProcessed": s.bytes_processed,
            "totalLinesProcessed": s.lines_processed,
            "execTime": secs,
            "queueTime": 0,
            "subqueries": 0,
            "totalEntriesReturned": s.entries_returned,
            "splits": 0,
            "shards": 0,
            "totalPostFilterLines": s.entries_returned,
            "totalStructuredMetadataBytesProcessed": 0,
        },
        "querier": {"store": store},
        "ingester": {
            "totalReached": 0, "totalChunksMatched": 0, "totalBatches": 0, "totalLinesSent": 0,
            "store": store,
        },
        "cache": {},
        "sightline": {"explain": s.explain},
    })
}

fn result_json(out: &QueryOutput, started: Instant) -> Value {
    let (kind, result) = match &out.value {
        QueryValue::Streams(streams) => (
            "streams",
            streams
                .iter()
                .map(|s| {
                    json!({
                        "stream": s.labels,
                        "values": s.entries.iter().map(|(t, l)| json!([t.to_string(), l])).collect::<Vec<_>>(),
                    })
                })
                .collect::<Vec<_>>(),
        ),
        QueryValue::Matrix(m) => ("matrix", m.iter().map(|s| series_json(s, false)).collect()),
        QueryValue::Vector(v) => ("vector", v.iter().map(|s| series_json(s, true)).collect()),
    };
    json!({
        "status": "success",
        "data": {"resultType": kind, "result": result, "stats": stats_json(out, started)},
    })
}

fn limit_and_direction(p: &[(String, String)]) -> Result<(usize, Direction), LokiError> {
    let limit = match param(p, "limit") {
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|l| *l > 0)
            .ok_or_else(|| bad(format!("invalid limit {l:?}: must be a positive integer")))?,
        None => DEFAULT_LIMIT,
    };
    let direction = match param(p, "direction")
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("backward") => Direction::Backward,
        Some("forward") => Direction::Forward,
        Some(d) => {
            return Err(bad(format!(
                "invalid direction {d:?}: use backward or forward"
            )));
        }
    };
    Ok((limit, direction))
}

async fn query_range(
    State(st): State<AppState>,
    method: Method,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let (tenant, p) = match prepare(&st, &method, &headers, q.as_deref(), &body) {
        Ok(x) => x,
        Err(e) => return e.into_response(),
    };
    let store = st.store().clone();
    run(&st, &tenant.clone(), move |deadline| {
        let started = Instant::now();
        let text = param(&p, "query").ok_or_else(|| bad("query parameter is required"))?;
        let expr = logql::parse(text).map_err(query_err)?;
        let (start_ns, end_ns) =
            params::time_range(&p, DEFAULT_SPAN_NS, store.now()).map_err(bad)?;
        let (limit, direction) = limit_and_direction(&p)?;
        let step_ns = match param(&p, "step") {
            Some(s) => DurationDialect::LokiStep.parse(s).map_err(bad)?.0,
            // Loki's default: (end - start) / 250, at least one second.
            None => ((end_ns - start_ns) / 250 / 1_000_000_000).max(1) * 1_000_000_000,
        };
        let out = eval::query_range(
            &store,
            &tenant,
            &expr,
            RangeParams {
                start_ns,
                end_ns,
                step_ns,
                limit,
                direction,
            },
            deadline,
        )
        .map_err(query_err)?;
        Ok(result_json(&out, started))
    })
    .await
}

async fn query(
    State(st): State<AppState>,
    method: Method,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let (tenant, p) = match prepare(&st, &method, &headers, q.as_deref(), &body) {
        Ok(x) => x,
        Err(e) => return e.into_response(),
    };
    let store = st.store().clone();
    run(&st, &tenant.clone(), move |deadline| {
        let started = Instant::now();
        let text = param(&p, "query").ok_or_else(|| bad("query parameter is required"))?;
        let expr = logql::parse(text).map_err(query_err)?;
        let time_ns = match param(&p, "time") {
            Some(t) => TimeDialect::Loki.parse(t).map_err(bad)?.0,
            None => store.now().0,
        };
        let out =
            eval::query_instant(&store, &tenant, &expr, time_ns, deadline).map_err(query_err)?;
        Ok(result_json(&out, started))
    })
    .await
}
