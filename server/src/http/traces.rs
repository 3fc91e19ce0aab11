//! The native trace API (JSON in, JSON out):
//!
//! * `GET /api/v1/traces/{trace_id}`: every span of a trace (hex id) with parents, events,
//!   links, attributes, the root, orphans and the critical path;
//! * `GET|POST /api/v1/traces/search`: trace search (`group=traces`, the default) or span search
//!   (`group=spans`) with filters on service, span name, status, kind, duration, GenAI fields,
//!   span/resource attributes (equality and regex) and an optional TraceQL filter `q`;
//! * `GET|POST /api/v1/traces/red`: rate, error ratio and latency quantiles per group and bucket.
//!
//! GET takes query parameters (`attr` and `resource_attr` repeat); POST takes a JSON object with
//! the same keys (arrays for repeated ones). `explain=true` adds the scan statistics. Answers
//! are `{"status": "success", "data": ..}`; errors are [`super::ApiError`]s: 400 (bad input),
//! 401 (auth), 404 (unknown trace), 415 (POST body not JSON), 503 (deadline), 500 (storage).
//! Parameters are parsed (regexes, TraceQL) and searches run through the [`super::Runner`].
//! See docs/traces.md for every parameter.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::handler::Handler;
use axum::http::HeaderMap;
use axum::middleware::from_fn;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use sightline_query::QueryError;
use sightline_query::time::{DurationDialect, TimeDialect};
use sightline_query::traces::traceql::parse;
use sightline_query::traces::{
    CmpOp, Cond, GroupBy, RedQuery, Scope, SortBy, SpanQuery, TraceCursor, TraceView, red,
    search_spans, search_traces, trace_by_id,
};
use sightline_storage::{
    Attributes, Deadline, MatchOp, SpanRecord, Store, TenantId, TimeRange, TraceId, UnixNanos,
};

use super::{ApiError, AppState, answer, guard, request_tenant};

/// The routes of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/traces/search",
            get(search_get).post(search_post.layer(from_fn(guard::require_json))),
        )
        .route(
            "/api/v1/traces/red",
            get(red_get).post(red_post.layer(from_fn(guard::require_json))),
        )
        .route("/api/v1/traces/{trace_id}", get(by_id))
}

pub(crate) fn bad(msg: impl std::fmt::Display) -> ApiError {
    ApiError::bad_data(msg.to_string())
}

/// Maps a query error onto the shared classification.
pub(crate) fn query_error(e: QueryError) -> ApiError {
    e.into()
}

/// Query-string pairs.
pub(crate) fn query_pairs(raw: Option<&str>) -> Vec<(String, String)> {
    form_urlencoded::parse(raw.unwrap_or("").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// A JSON object body as pairs (arrays repeat their key; numbers and booleans as text).
pub(crate) fn json_pairs(body: &[u8]) -> Result<Vec<(String, String)>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    let v: Value = serde_json::from_slice(body).map_err(|e| bad(format!("invalid JSON: {e}")))?;
    let Value::Object(map) = v else {
        return Err(bad("the body must be a JSON object"));
    };
    let mut out = Vec::new();
    fn scalar(k: &str, v: &Value) -> Result<Option<String>, ApiError> {
        Ok(match v {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => return Err(bad(format!("{k}: expected a string, number or boolean"))),
        })
    }
    for (k, v) in &map {
        if let Value::Array(items) = v {
            for it in items {
                if let Some(s) = scalar(k, it)? {
                    out.push((k.clone(), s));
                }
            }
        } else if let Some(s) = scalar(k, v)? {
            out.push((k.clone(), s));
        }
    }
    Ok(out)
}

/// `key op value` of an `attr` parameter (`k=v`, `k!=v`, `k=~re`, `k!~re`).
fn attr_cond(scope: Scope, spec: &str) -> Result<Cond, ApiError> {
    let ops = [
        ("!=", MatchOp::NotEq),
        ("=~", MatchOp::Regex),
        ("!~", MatchOp::NotRegex),
        ("=", MatchOp::Eq),
    ];
    let mut best: Option<(usize, &str, MatchOp)> = None;
    for (tok, op) in ops {
        if let Some(i) = spec.find(tok)
            && best.is_none_or(|(bi, bt, _)| i < bi || (i == bi && tok.len() > bt.len()))
        {
            best = Some((i, tok, op));
        }
    }
    let Some((i, tok, op)) = best else {
        return Err(bad(format!(
            "attribute filter {spec:?}: expected key=value, key!=value, key=~regex or key!~regex"
        )));
    };
    let key = &spec[..i];
    if key.is_empty() {
        return Err(bad(format!("attribute filter {spec:?} has no key")));
    }
    Cond::string(scope, key, op, &spec[i + tok.len()..]).map_err(query_error)
}

/// Filters shared by search and RED.
pub(crate) struct Filters {
    pub time: TimeRange,
    pub conds: Vec<Cond>,
    pub explain: bool,
}

fn num(key: &str, v: &str) -> Result<f64, ApiError> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| bad(format!("{key}: expected a number, got {v:?}")))
}

/// Numeric range parameters: `(min key, max key, attribute key)`.
const RANGES: &[(&str, &str, &str)] = &[
    (
        "min_input_tokens",
        "max_input_tokens",
        "gen_ai.usage.input_tokens",
    ),
    (
        "min_output_tokens",
        "max_output_tokens",
        "gen_ai.usage.output_tokens",
    ),
    (
        "min_entropy_mean",
        "max_entropy_mean",
        "sightline.entropy.mean",
    ),
    (
        "min_entropy_max",
        "max_entropy_max",
        "sightline.entropy.max",
    ),
    (
        "min_hallucination",
        "max_hallucination",
        "sightline.hallucination_index",
    ),
];

/// Parses the filter parameters; other keys are left to the caller, unknown ones rejected.
pub(crate) fn filters(
    pairs: &[(String, String)],
    extra_keys: &[&str],
) -> Result<Filters, ApiError> {
    let mut start = UnixNanos(i64::MIN);
    let mut end = UnixNanos(i64::MAX);
    let mut conds = Vec::new();
    let mut explain = false;
    // Durations: integer nanoseconds or TraceQL's (`250ms`); the message names the parameter.
    let duration = |k: &str, v: &str| {
        DurationDialect::NanosOrTraceQl
            .parse(v)
            .map_err(|e| bad(format!("{k}: {}", QueryError::from(e))))
    };
    for (k, v) in pairs {
        let k = k.as_str();
        let eq = |key: &str| Cond::string(Scope::Any, key, MatchOp::Eq, v).map_err(query_error);
        match k {
            "start" | "end" => {
                let t = TimeDialect::UnixSeconds
                    .parse(v)
                    .map_err(|e| bad(format!("{k}: {e}")))?;
                if k == "start" {
                    start = t;
                } else {
                    end = t;
                }
            }
            "service" => conds.push(eq("service.name")?),
            "name" => conds.push(eq("name")?),
            // The request or the response model (a request for `gpt-4o` is answered by a dated
            // `gpt-4o-2024-08-06`; either name finds the span).
            "model" => conds.push(
                Cond::any(vec![
                    eq("gen_ai.request.model")?,
                    eq("gen_ai.response.model")?,
                ])
                .map_err(query_error)?,
            ),
            "provider" => conds.push(eq("gen_ai.provider.name")?),
            "operation" => conds.push(eq("gen_ai.operation.name")?),
            "status" | "kind" => conds.push(
                Cond::string(Scope::Any, k, MatchOp::Eq, &v.to_lowercase()).map_err(query_error)?,
            ),
            "min_duration" => conds.push(Cond::number(
                Scope::Any,
                "duration",
                CmpOp::Ge,
                duration(k, v)?.0 as f64,
            )),
            "max_duration" => conds.push(Cond::number(
                Scope::Any,
                "duration",
                CmpOp::Le,
                duration(k, v)?.0 as f64,
            )),
            "attr" => conds.push(attr_cond(Scope::Any, v)?),
            "span_attr" => conds.push(attr_cond(Scope::Span, v)?),
            "resource_attr" => conds.push(attr_cond(Scope::Resource, v)?),
            "q" => conds.extend(parse(v).map_err(|e| bad(format!("q: {e}")))?),
            "explain" => explain = matches!(v.as_str(), "true" | "1"),
            _ => {
                if let Some((min, _, key)) = RANGES.iter().find(|(a, b, _)| *a == k || *b == k) {
                    let op = if *min == k { CmpOp::Ge } else { CmpOp::Le };
                    conds.push(Cond::number(Scope::Any, key, op, num(k, v)?));
                } else if !extra_keys.contains(&k) {
                    return Err(bad(format!("unknown parameter {k:?}")));
                }
            }
        }
    }
    let time = TimeRange::new(start, end).map_err(bad)?;
    Ok(Filters {
        time,
        conds,
        explain,
    })
}

fn last<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

async fn search_get(
    State(st): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    search(st, headers, query_pairs(q.as_deref()))
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn search_post(State(st): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let pairs = match json_pairs(&body) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    search(st, headers, pairs)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn search(
    st: AppState,
    headers: HeaderMap,
    pairs: Vec<(String, String)>,
) -> Result<Response, ApiError> {
    let tenant = request_tenant(&st, &headers)?;
    let store = st.store().clone();
    let t = tenant.clone();
    answer(&st, &tenant, move |deadline| {
        search_now(&store, &t, &pairs, deadline)
    })
    .await
}

fn search_now(
    store: &Store,
    tenant: &TenantId,
    pairs: &[(String, String)],
    deadline: &Deadline,
) -> Result<Value, ApiError> {
    let f = filters(
        pairs,
        &["limit", "sort", "group", "spans_per_trace", "cursor"],
    )?;
    let mut q = SpanQuery::new(f.time);
    q.conds = f.conds;
    q.deadline = deadline.clone();
    if let Some(l) = last(pairs, "limit") {
        q.limit = l
            .parse()
            .map_err(|_| bad(format!("limit: expected a count, got {l:?}")))?;
    }
    if let Some(s) = last(pairs, "spans_per_trace") {
        q.spans_per_trace = s
            .parse()
            .map_err(|_| bad(format!("spans_per_trace: expected a count, got {s:?}")))?;
    }
    q.sort = match last(pairs, "sort") {
        None | Some("start") => SortBy::Start,
        Some("duration") => SortBy::Duration,
        Some(o) => return Err(bad(format!("sort: expected start or duration, got {o:?}"))),
    };
    let spans = match last(pairs, "group") {
        None | Some("traces") => false,
        Some("spans") => true,
        Some(o) => return Err(bad(format!("group: expected traces or spans, got {o:?}"))),
    };
    if let Some(c) = last(pairs, "cursor") {
        if spans {
            return Err(bad(
                "cursor: only trace search (group=traces) pages by cursor",
            ));
        }
        q.after = Some(TraceCursor::parse(c).map_err(query_error)?);
    }
    let (mut data, stats) = if spans {
        let r = search_spans(store, tenant, &q).map_err(query_error)?;
        let stats = serde_json::to_value(&r.stats).unwrap_or(Value::Null);
        (
            json!({"spans": r.spans, "total_matched": r.total_matched}),
            stats,
        )
    } else {
        let r = search_traces(store, tenant, &q).map_err(query_error)?;
        let stats = serde_json::to_value(&r.stats).unwrap_or(Value::Null);
        (
            json!({"traces": r.traces, "total_traces": r.total_traces,
                   "remaining_traces": r.remaining_traces, "next_cursor": r.next_cursor,
                   "total_spans": r.total_spans}),
            stats,
        )
    };
    if f.explain
        && let Value::Object(m) = &mut data
    {
        m.insert("stats".into(), stats);
    }
    Ok(data)
}

async fn red_get(
    State(st): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    red_handler(st, headers, query_pairs(q.as_deref()))
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn red_post(State(st): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let pairs = match json_pairs(&body) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    red_handler(st, headers, pairs)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn red_handler(
    st: AppState,
    headers: HeaderMap,
    pairs: Vec<(String, String)>,
) -> Result<Response, ApiError> {
    let tenant = request_tenant(&st, &headers)?;
    let store = st.store().clone();
    let t = tenant.clone();
    answer(&st, &tenant, move |deadline| {
        red_now(&store, &t, &pairs, deadline)
    })
    .await
}

fn red_now(
    store: &Store,
    tenant: &TenantId,
    pairs: &[(String, String)],
    deadline: &Deadline,
) -> Result<Value, ApiError> {
    let f = filters(pairs, &["step", "group_by"])?;
    let step_nanos = match last(pairs, "step") {
        None => 60_000_000_000,
        // Through f64 as before: integer steps past 2^53 ns round as they always did.
        Some(s) => {
            DurationDialect::NanosOrTraceQl
                .parse(s)
                .map_err(|e| bad(format!("step: {}", QueryError::from(e))))?
                .0 as f64 as i64
        }
    };
    let group_by = match last(pairs, "group_by") {
        None | Some("service") => GroupBy::Service,
        Some("model") => GroupBy::Model,
        Some("operation") => GroupBy::Operation,
        Some("name") => GroupBy::Name,
        Some(o) => {
            return Err(bad(format!(
                "group_by: expected service, model, operation or name, got {o:?}"
            )));
        }
    };
    let q = RedQuery {
        time: f.time,
        step_nanos,
        group_by,
        conds: f.conds,
        deadline: deadline.clone(),
    };
    let r = red(store, tenant, &q).map_err(query_error)?;
    let mut data = json!({"group_by": r.group_by, "step_nanos": r.step_nanos, "series": r.series});
    if f.explain
        && let Value::Object(m) = &mut data
    {
        m.insert(
            "stats".into(),
            serde_json::to_value(&r.stats).unwrap_or(Value::Null),
        );
    }
    Ok(data)
}

fn attrs_json(a: &Attributes) -> Value {
    Value::Object(a.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
}

fn span_json(s: &SpanRecord) -> Value {
    let g = &s.gen_ai;
    let qf = &s.quality;
    json!({
        "trace_id": s.trace_id,
        "span_id": s.span_id,
        "parent_span_id": s.parent_span_id,
        "name": s.name,
        "service_name": s.service_name,
        "kind": sightline_storage::predicate::span_kind_name(s.kind as u8),
        "start_unix_nano": s.start.0,
        "end_unix_nano": s.end.0,
        "duration_nano": s.duration_nanos(),
        "status": {"code": s.status_code.as_str(), "message": s.status_message},
        "trace_state": s.trace_state,
        "flags": s.flags,
        "scope": {"name": s.scope_name, "version": s.scope_version},
        "gen_ai": g,
        "quality": qf,
        "resource_attributes": attrs_json(&s.resource_attributes),
        "attributes": attrs_json(&s.attributes),
        "events": s.events.iter().map(|e| json!({
            "time_unix_nano": e.time.0, "name": e.name, "attributes": attrs_json(&e.attributes)
        })).collect::<Vec<_>>(),
        "links": s.links.iter().map(|l| json!({
            "trace_id": l.trace_id, "span_id": l.span_id, "trace_state": l.trace_state,
            "attributes": attrs_json(&l.attributes)
        })).collect::<Vec<_>>(),
    })
}

fn trace_json(v: &TraceView, explain: bool) -> Value {
    let mut out = json!({
        "trace_id": v.trace_id,
        "root": v.root,
        "orphans": v.orphans,
        "critical_path": v.critical_path,
        "spans": v.spans.iter().map(span_json).collect::<Vec<_>>(),
    });
    if explain && let Value::Object(m) = &mut out {
        m.insert(
            "stats".into(),
            serde_json::to_value(&v.stats).unwrap_or(Value::Null),
        );
    }
    out
}

/// Parses a hex trace id (Tempo strips leading zeros, so shorter ids are left-padded).
pub(crate) fn parse_trace_id(s: &str) -> Result<TraceId, ApiError> {
    let s = s.trim();
    if s.is_empty() || s.len() > 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad(format!("trace id {s:?} is not 1 to 32 hex digits")));
    }
    TraceId::from_hex(&format!("{s:0>32}")).map_err(bad)
}

async fn by_id(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> Response {
    let res: Result<Response, ApiError> = async {
        let tenant = request_tenant(&st, &headers)?;
        let trace_id = parse_trace_id(&id)?;
        let explain = query_pairs(q.as_deref())
            .iter()
            .any(|(k, v)| k == "explain" && (v == "true" || v == "1"));
        let store = st.store().clone();
        let t = tenant.clone();
        answer(&st, &tenant, move |deadline| {
            match trace_by_id(&store, &t, trace_id, deadline).map_err(query_error)? {
                Some(v) => Ok(trace_json(&v, explain)),
                None => Err(ApiError::not_found(format!("trace {trace_id} not found"))),
            }
        })
        .await
    }
    .await;
    res.unwrap_or_else(IntoResponse::into_response)
}
