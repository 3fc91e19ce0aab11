//! The subset of Tempo's HTTP API that Grafana's Tempo datasource calls:
//!
//! * `GET /api/echo` -> `echo` (the datasource's health check);
//! * `GET /api/status/buildinfo` -> a Tempo-style build info;
//! * `GET /api/traces/{id}` (v1): `tempopb.Trace` as protobuf with `Accept:
//!   application/protobuf`, else Tempo's JSON `{"batches": [...]}` (base64 ids);
//! * `GET /api/v2/traces/{id}`: `tempopb.TraceByIDResponse` as protobuf, else
//!   `{"trace": {"batches": [...]}, "metrics": {}}`;
//! * `GET /api/search` with `q` (TraceQL subset, see `sightline_query::traces::traceql`), `tags`
//!   (logfmt), `minDuration`, `maxDuration`, `limit`, `spss`, `start`, `end` (unix seconds);
//! * `GET /api/search/tags`, `/api/search/tag/{tag}/values` (v1) and `/api/v2/search/tags`,
//!   `/api/v2/search/tag/{tag}/values` (scoped names, typed values).
//!
//! Errors are plain text with 400 (bad query, naming the unsupported construct), 401 (auth),
//! 404 (unknown trace) and 503 (deadline), as Tempo answers them ([`super::ApiError`] rendered
//! as text). Parsing and searches run through the [`super::Runner`].

mod export;
mod proto;

use axum::Router;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prost::Message;
use serde_json::{Value, json};
use sightline_query::time::{DurationDialect, TimeDialect};
use sightline_query::traces::traceql::{parse, parse_tags};
use sightline_query::traces::{
    CmpOp, Cond, Scope, SpanHit, SpanQuery, search_traces, tag_names, tag_values, trace_by_id,
};
use sightline_storage::{TimeRange, UnixNanos};

pub use export::{resource_spans, span, span_attributes};
pub use proto::{Trace, TraceByIdMetrics, TraceByIdResponse, ids_to_base64};

use super::traces::{parse_trace_id, query_pairs};
use super::{ApiError, AppState, request_tenant};

/// The routes of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/echo", get(|| async { "echo" }))
        .route("/api/status/buildinfo", get(buildinfo))
        .route("/api/traces/{id}", get(trace_v1))
        .route("/api/v2/traces/{id}", get(trace_v2))
        .route("/api/search", get(search))
        .route("/api/search/tags", get(tags_v1))
        .route("/api/search/tag/{tag}/values", get(tag_values_v1))
        .route("/api/v2/search/tags", get(tags_v2))
        .route("/api/v2/search/tag/{tag}/values", get(tag_values_v2))
        .layer(axum::middleware::map_response(
            super::error::plain_text_errors,
        ))
}

/// Tempo answers errors as plain text: the routes' [`ApiError`]s are re-rendered so.
type TempoError = ApiError;

fn bad(msg: impl std::fmt::Display) -> TempoError {
    ApiError::bad_data(msg.to_string())
}

fn from_query(e: sightline_query::QueryError) -> TempoError {
    e.into()
}

async fn buildinfo() -> Response {
    axum::Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "revision": "sightline",
        "branch": "",
        "buildUser": "",
        "buildDate": "",
        "goVersion": "",
    }))
    .into_response()
}

fn wants_protobuf(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/protobuf") || v.contains("application/x-protobuf"))
}

async fn load(
    st: &AppState,
    headers: &HeaderMap,
    id: &str,
) -> Result<Vec<opentelemetry_proto::tonic::trace::v1::ResourceSpans>, TempoError> {
    let tenant = request_tenant(st, headers)?;
    let trace_id = parse_trace_id(id)?;
    let store = st.store().clone();
    let t = tenant.clone();
    st.run(&tenant, move |deadline| {
        match trace_by_id(&store, &t, trace_id, deadline).map_err(from_query)? {
            Some(v) => Ok(resource_spans(&v.spans)),
            None => Err(ApiError::not_found(format!("trace {trace_id} not found"))),
        }
    })
    .await
}

fn protobuf(bytes: Vec<u8>) -> Response {
    ([(header::CONTENT_TYPE, "application/protobuf")], bytes).into_response()
}

async fn trace_v1(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    match load(&st, &headers, &id).await {
        Ok(batches) if wants_protobuf(&headers) => protobuf(Trace { batches }.encode_to_vec()),
        Ok(batches) => axum::Json(proto::trace_json(&batches)).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn trace_v2(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    match load(&st, &headers, &id).await {
        Ok(batches) if wants_protobuf(&headers) => protobuf(
            TraceByIdResponse {
                trace: Some(Trace { batches }),
                metrics: Some(TraceByIdMetrics::default()),
            }
            .encode_to_vec(),
        ),
        Ok(batches) => {
            axum::Json(json!({"trace": proto::trace_json(&batches), "metrics": {}})).into_response()
        }
        Err(e) => e.into_response(),
    }
}

fn time_range(pairs: &[(String, String)]) -> Result<TimeRange, TempoError> {
    let mut start = UnixNanos(i64::MIN);
    let mut end = UnixNanos(i64::MAX);
    let unix_seconds = |k: &str, v: &str| {
        TimeDialect::UnixSeconds
            .parse(v)
            .map_err(|e| bad(format!("{k}: {e}")))
    };
    for (k, v) in pairs {
        match k.as_str() {
            "start" if v != "0" => start = unix_seconds(k, v)?,
            // Tempo's end is inclusive at second resolution.
            "end" if v != "0" => end = unix_seconds(k, v)?.saturating_add(1_000_000_000),
            _ => {}
        }
    }
    TimeRange::new(start, end).map_err(bad)
}

fn kv(key: &str, value: Value) -> Value {
    json!({"key": key, "value": value})
}

fn span_json(h: &SpanHit) -> Value {
    let mut attrs = vec![kv("service.name", json!({"stringValue": h.service_name}))];
    let strs = [
        ("gen_ai.request.model", &h.model),
        ("gen_ai.provider.name", &h.provider),
        ("gen_ai.operation.name", &h.operation),
    ];
    for (k, v) in strs {
        if let Some(v) = v {
            attrs.push(kv(k, json!({"stringValue": v})));
        }
    }
    for (k, v) in [
        ("gen_ai.usage.input_tokens", h.input_tokens),
        ("gen_ai.usage.output_tokens", h.output_tokens),
    ] {
        if let Some(v) = v {
            attrs.push(kv(k, json!({"intValue": v.to_string()})));
        }
    }
    if h.status == "error" {
        attrs.push(kv("status", json!({"stringValue": "error"})));
    }
    json!({
        "spanID": h.span_id,
        "name": h.name,
        "startTimeUnixNano": h.start_unix_nano.to_string(),
        "durationNanos": h.duration_nano.to_string(),
        "attributes": attrs,
    })
}

async fn search(
    State(st): State<AppState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Response {
    let res: Result<Response, TempoError> = async {
        let tenant = request_tenant(&st, &headers)?;
        let pairs = query_pairs(raw.as_deref());
        let store = st.store().clone();
        let t = tenant.clone();
        st.run(&tenant, move |deadline| {
        let tenant = t;
        let mut q = SpanQuery::new(time_range(&pairs)?);
        q.deadline = deadline.clone();
        for (k, v) in &pairs {
            match k.as_str() {
                "q" => q.conds.extend(parse(v).map_err(|e| bad(format!("invalid TraceQL query: {e}")))?),
                "tags" => q.conds.extend(parse_tags(v).map_err(|e| bad(format!("invalid tags: {e}")))?),
                "minDuration" | "maxDuration" if !v.is_empty() => {
                    let n = DurationDialect::TraceQl
                        .parse(v)
                        .map_err(|e| bad(format!("{k}: {}", sightline_query::QueryError::from(e))))?
                        .0;
                    let op = if k == "minDuration" { CmpOp::Ge } else { CmpOp::Le };
                    q.conds.push(Cond::number(Scope::Any, "duration", op, n as f64));
                }
                "limit" if !v.is_empty() => {
                    q.limit = v.parse().map_err(|_| bad(format!("limit: expected a count, got {v:?}")))?;
                }
                "spss" if !v.is_empty() => {
                    q.spans_per_trace = v.parse().map_err(|_| bad(format!("spss: expected a count, got {v:?}")))?;
                }
                _ => {}
            }
        }
            let r = search_traces(&store, &tenant, &q).map_err(from_query)?;
            let traces: Vec<Value> = r
                .traces
                .iter()
                .map(|t| {
                    let set = json!({
                        "spans": t.spans.iter().map(span_json).collect::<Vec<_>>(),
                        "matched": t.matched,
                    });
                    json!({
                        "traceID": t.trace_id,
                        "rootServiceName": if t.root_service_name.is_empty() { "<root span not yet received>" } else { t.root_service_name.as_str() },
                        "rootTraceName": if t.root_span_name.is_empty() { "<root span not yet received>" } else { t.root_span_name.as_str() },
                        "startTimeUnixNano": t.start_unix_nano.to_string(),
                        "durationMs": t.duration_nano / 1_000_000,
                        "spanSet": set.clone(),
                        "spanSets": [set],
                    })
                })
                .collect();
            let s = &r.stats;
            Ok(axum::Json(json!({
                "traces": traces,
                "metrics": {
                    "inspectedTraces": r.total_traces,
                    "inspectedSpans": (s.rows_decoded + s.memtable_rows).to_string(),
                    "inspectedBytes": "0",
                    "totalBlocks": s.segments_total,
                    "completedJobs": 1,
                    "totalJobs": 1,
                },
            }))
            .into_response())
        })
        .await
    }
    .await;
    res.unwrap_or_else(IntoResponse::into_response)
}

async fn tags_v1(
    State(st): State<AppState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Response {
    tags(st, headers, raw, false)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn tags_v2(
    State(st): State<AppState>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Response {
    tags(st, headers, raw, true)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn tags(
    st: AppState,
    headers: HeaderMap,
    raw: Option<String>,
    v2: bool,
) -> Result<Response, TempoError> {
    let tenant = request_tenant(&st, &headers)?;
    let pairs = query_pairs(raw.as_deref());
    let time = time_range(&pairs)?;
    let scope = pairs
        .iter()
        .find(|(k, _)| k == "scope")
        .map(|(_, v)| v.clone());
    if let Some(s) = &scope
        && !matches!(s.as_str(), "" | "all" | "span" | "resource" | "intrinsic")
    {
        return Err(bad(format!(
            "scope: expected span, resource, intrinsic or all, got {s:?}"
        )));
    }
    let store = st.store().clone();
    let tn = tenant.clone();
    st.run(&tenant, move |deadline| {
        let t = tag_names(&store, &tn, time, deadline).map_err(from_query)?;
        if !v2 {
            let mut all: Vec<String> = t.span.iter().chain(&t.resource).cloned().collect();
            all.sort();
            all.dedup();
            return Ok(axum::Json(json!({"tagNames": all})).into_response());
        }
        let want = |name: &str| {
            scope
                .as_deref()
                .is_none_or(|s| s.is_empty() || s == "all" || s == name)
        };
        let mut scopes = Vec::new();
        for (name, list) in [
            ("span", &t.span),
            ("resource", &t.resource),
            ("intrinsic", &t.intrinsic),
        ] {
            if want(name) {
                scopes.push(json!({"name": name, "tags": list}));
            }
        }
        Ok(axum::Json(json!({"scopes": scopes})).into_response())
    })
    .await
}

/// Splits a v2 tag (`resource.service.name`, `span.x`, `.x`, `name`) into scope and key.
fn split_tag(tag: &str) -> (Scope, &str) {
    if let Some(k) = tag.strip_prefix("resource.") {
        (Scope::Resource, k)
    } else if let Some(k) = tag.strip_prefix("span.") {
        (Scope::Span, k)
    } else if let Some(k) = tag.strip_prefix('.') {
        (Scope::Any, k)
    } else {
        (Scope::Any, tag)
    }
}

async fn tag_values_v1(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path(tag): Path<String>,
    RawQuery(raw): RawQuery,
) -> Response {
    values(st, headers, tag, raw, false)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn tag_values_v2(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path(tag): Path<String>,
    RawQuery(raw): RawQuery,
) -> Response {
    values(st, headers, tag, raw, true)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn values(
    st: AppState,
    headers: HeaderMap,
    tag: String,
    raw: Option<String>,
    v2: bool,
) -> Result<Response, TempoError> {
    let tenant = request_tenant(&st, &headers)?;
    let pairs = query_pairs(raw.as_deref());
    let time = time_range(&pairs)?;
    let store = st.store().clone();
    let tn = tenant.clone();
    st.run(&tenant, move |deadline| {
        let mut conds = Vec::new();
        if let Some((_, q)) = pairs.iter().find(|(k, _)| k == "q") {
            conds = parse(q).map_err(|e| bad(format!("invalid TraceQL query: {e}")))?;
        }
        let (scope, key) = if v2 {
            split_tag(&tag)
        } else {
            (Scope::Any, tag.as_str())
        };
        let (vals, _) =
            tag_values(&store, &tn, time, scope, key, &conds, deadline).map_err(from_query)?;
        Ok(if v2 {
            axum::Json(json!({"tagValues": vals})).into_response()
        } else {
            let plain: Vec<&str> = vals.iter().map(|v| v.value.as_str()).collect();
            axum::Json(json!({"tagValues": plain})).into_response()
        })
    })
    .await
}
