//! The LLM quality API (see docs/quality.md and [`crate::quality`]):
//!
//! * `GET /api/v1/quality?metric=&by=&start=&end=&step=[&service=&model=&provider=]` ->
//!   `{"metric", "by", "step_ms", "series": [{"group", "points": [[t_ms, value|null], ..]}]}`;
//! * `GET /api/v1/quality/tokens?trace_id=&span_id=` -> one response's tokens with entropy;
//! * `GET /api/v1/quality/values?field=model|provider|operation|service|route` ->
//!   `{"values": [..]}` (for Grafana template variables);
//! * `GET /api/v1/quality/provenance?[document=&unsupported=true&route=&prompt_template=&limit=&start=&end=&service=&model=&provider=]`
//!   -> `{"answers": [..]}`: the scored answers (newest first) whose context held `document`,
//!   or that have unsupported sentences, each with its per-sentence provenance;
//! * `GET /api/v1/quality/provenance/groups?by=model|route|prompt_template|service|provider&[same filters]`
//!   -> `{"groups": [..]}`: answers and unsupported sentences per group;
//! * `GET /api/v1/quality/documents?[limit=&start=&end=&service=&model=&provider=]` ->
//!   `{"documents": [..], "retrieval": {..}}`: usage per document and per-retrieval measures.
//!
//! Times are Unix seconds (fractions allowed), nanoseconds or RFC 3339; `step` a duration
//! (`60s`, `5m`) or seconds. Defaults: the last hour, step 60 s. Errors are
//! [`super::ApiError`]s: 400 (bad parameters), 401 (auth), 404 (unknown span or no logprobs),
//! 422 (stored logprobs that cannot be scored), 503 (deadline), 500 (storage). The work runs
//! through the [`super::Runner`].

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use sightline_query::time::{DurationDialect, TimeDialect};
use sightline_storage::UnixNanos;

use super::params::get as param;
use super::traces::{bad, query_pairs};
use super::{ApiError, AppState, request_tenant as tenant};
use crate::quality::empty::explain_empty;
use crate::quality::provenance::{self, ProvenanceQuery};
use crate::quality::{
    GroupKey, QualityError, QualityMetric, QualityQuery, SpanFilters, quality_series,
    response_tokens, values,
};

/// Default range of a quality query: the last hour.
const DEFAULT_RANGE_NS: i64 = 3_600_000_000_000;
/// Default bucket: one minute.
const DEFAULT_STEP_NS: i64 = 60_000_000_000;

/// The routes of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/quality", get(series))
        .route("/api/v1/quality/tokens", get(tokens))
        .route("/api/v1/quality/values", get(field_values))
        .route("/api/v1/quality/provenance", get(provenance))
        .route("/api/v1/quality/provenance/groups", get(provenance_groups))
        .route("/api/v1/quality/documents", get(document_usage))
}

fn quality_error(e: QualityError) -> ApiError {
    match e {
        QualityError::BadRequest(m) => bad(m),
        QualityError::NotFound(m) => ApiError::not_found(m),
        e @ QualityError::Logprobs(_) => ApiError::execution(e.to_string()),
        QualityError::Query(q) => q.into(),
    }
}

fn range(p: &[(String, String)], now: UnixNanos) -> Result<(i64, i64), ApiError> {
    let end = match param(p, "end") {
        Some(e) => TimeDialect::Loki.parse(e).map_err(bad)?.0,
        None => now.0,
    };
    let start = match param(p, "start") {
        Some(s) => TimeDialect::Loki.parse(s).map_err(bad)?.0,
        None => end.saturating_sub(DEFAULT_RANGE_NS),
    };
    if end <= start {
        return Err(bad("end must be after start"));
    }
    Ok((start, end))
}

async fn series(st: State<AppState>, headers: HeaderMap, RawQuery(q): RawQuery) -> Response {
    series_handler(st.0, headers, query_pairs(q.as_deref()))
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn series_handler(
    st: AppState,
    headers: HeaderMap,
    p: Vec<(String, String)>,
) -> Result<Response, ApiError> {
    let tenant = tenant(&st, &headers)?;
    let metric =
        QualityMetric::parse(param(&p, "metric").ok_or_else(|| bad("metric is required"))?)
            .map_err(quality_error)?;
    let by = GroupKey::parse(param(&p, "by").unwrap_or("model")).map_err(quality_error)?;
    let (start_ns, end_ns) = range(&p, st.now())?;
    let step_ns = match param(&p, "step") {
        Some(s) => {
            DurationDialect::LokiStep
                .parse(s)
                .map_err(|e| bad(format!("step: {e}")))?
                .0
        }
        None => DEFAULT_STEP_NS,
    };
    let query = QualityQuery {
        metric,
        by: by.clone(),
        start_ns,
        end_ns,
        step_ns,
        filters: SpanFilters {
            service: param(&p, "service").map(str::to_owned),
            model: param(&p, "model").map(str::to_owned),
            provider: param(&p, "provider").map(str::to_owned),
        },
    };
    let store = st.store().clone();
    let t = tenant.clone();
    let (out, why) = st
        .run(&tenant, move |deadline| {
            let out = quality_series(&store, &t, &query, deadline).map_err(quality_error)?;
            let why = if out.is_empty() {
                Some(explain_empty(&store, &t, &query, deadline).map_err(quality_error)?)
            } else {
                None
            };
            Ok((out, why))
        })
        .await?;
    let mut body = json!({
        "metric": metric.name(),
        "by": by.name(),
        "step_ms": step_ns / 1_000_000,
        "series": out,
    });
    if let (Some(why), Some(m)) = (why, body.as_object_mut()) {
        m.insert("empty_reason".into(), why.empty_reason.into());
        m.insert("docs".into(), why.docs.into());
    }
    Ok(axum::Json(body).into_response())
}

async fn tokens(st: State<AppState>, headers: HeaderMap, RawQuery(q): RawQuery) -> Response {
    let run = async {
        let tenant = tenant(&st.0, &headers)?;
        let p = query_pairs(q.as_deref());
        let trace_id = param(&p, "trace_id")
            .ok_or_else(|| bad("trace_id is required"))?
            .to_owned();
        let span_id = param(&p, "span_id")
            .ok_or_else(|| bad("span_id is required"))?
            .to_owned();
        let store = st.0.store().clone();
        let t = tenant.clone();
        let view =
            st.0.run(&tenant, move |deadline| {
                response_tokens(&store, &t, &trace_id, &span_id, deadline).map_err(quality_error)
            })
            .await?;
        Ok::<_, ApiError>(axum::Json(view).into_response())
    };
    run.await.unwrap_or_else(IntoResponse::into_response)
}

async fn field_values(st: State<AppState>, headers: HeaderMap, RawQuery(q): RawQuery) -> Response {
    let run = async {
        let tenant = tenant(&st.0, &headers)?;
        let p = query_pairs(q.as_deref());
        let key = match param(&p, "field").ok_or_else(|| bad("field is required"))? {
            f @ ("model" | "provider" | "operation" | "service" | "route") => {
                GroupKey::parse(f).map_err(quality_error)?
            }
            other => {
                return Err(bad(format!(
                    "field: expected model, provider, operation, service or route, got {other:?}"
                )));
            }
        };
        let (start, end) = match (param(&p, "start"), param(&p, "end")) {
            (None, None) => (i64::MIN, i64::MAX),
            _ => range(&p, st.0.now())?,
        };
        let store = st.0.store().clone();
        let t = tenant.clone();
        let vals =
            st.0.run(&tenant, move |deadline| {
                values(&store, &t, &key, start, end, deadline).map_err(quality_error)
            })
            .await?;
        Ok(axum::Json(json!({ "values": vals })).into_response())
    };
    run.await.unwrap_or_else(IntoResponse::into_response)
}

/// Default and largest `limit` of the provenance routes.
const DEFAULT_PROVENANCE_LIMIT: usize = 100;

fn provenance_query(p: &[(String, String)], now: UnixNanos) -> Result<ProvenanceQuery, ApiError> {
    let (start_ns, end_ns) = range(p, now)?;
    let limit = match param(p, "limit") {
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=provenance::MAX_ANSWERS).contains(n))
            .ok_or_else(|| {
                bad(format!(
                    "limit: expected 1 to {}, got {l:?}",
                    provenance::MAX_ANSWERS
                ))
            })?,
        None => DEFAULT_PROVENANCE_LIMIT,
    };
    let unsupported_only = match param(p, "unsupported") {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(bad(format!(
                "unsupported: expected true or false, got {other:?}"
            )));
        }
    };
    Ok(ProvenanceQuery {
        start_ns,
        end_ns,
        filters: SpanFilters {
            service: param(p, "service").map(str::to_owned),
            model: param(p, "model").map(str::to_owned),
            provider: param(p, "provider").map(str::to_owned),
        },
        document: param(p, "document").map(str::to_owned),
        unsupported_only,
        route: param(p, "route").map(str::to_owned),
        prompt_template: param(p, "prompt_template").map(str::to_owned),
        limit,
    })
}

/// One provenance question: parses the shared parameters, runs `question` (given the store, the
/// tenant, the query and the raw parameters) on the runner and answers its JSON.
async fn provenance_route<F>(
    st: &AppState,
    headers: &HeaderMap,
    q: Option<&str>,
    question: F,
) -> Response
where
    F: FnOnce(
            &sightline_storage::Store,
            &sightline_storage::TenantId,
            &ProvenanceQuery,
            &[(String, String)],
            &sightline_storage::Deadline,
        ) -> Result<serde_json::Value, QualityError>
        + Send
        + 'static,
{
    let run = async {
        let tenant = tenant(st, headers)?;
        let pairs = query_pairs(q);
        let query = provenance_query(&pairs, st.now())?;
        let store = st.store().clone();
        let t = tenant.clone();
        let answer = st
            .run(&tenant, move |deadline| {
                question(&store, &t, &query, &pairs, deadline).map_err(quality_error)
            })
            .await?;
        Ok::<_, ApiError>(axum::Json(answer).into_response())
    };
    run.await.unwrap_or_else(IntoResponse::into_response)
}

async fn provenance(st: State<AppState>, headers: HeaderMap, RawQuery(q): RawQuery) -> Response {
    provenance_route(
        &st.0,
        &headers,
        q.as_deref(),
        |store, t, query, _, deadline| {
            let answers = provenance::answers(store, t, query, deadline)?;
            Ok(json!({ "answers": answers }))
        },
    )
    .await
}

async fn provenance_groups(
    st: State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    provenance_route(
        &st.0,
        &headers,
        q.as_deref(),
        |store, t, query, pairs, deadline| {
            let by = provenance::ProvenanceBy::parse(param(pairs, "by").unwrap_or("model"))?;
            let groups = provenance::groups(store, t, query, by, deadline)?;
            Ok(json!({ "groups": groups }))
        },
    )
    .await
}

async fn document_usage(
    st: State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    provenance_route(
        &st.0,
        &headers,
        q.as_deref(),
        |store, t, query, _, deadline| {
            let (documents, retrieval) = provenance::documents(store, t, query, deadline)?;
            Ok(json!({ "documents": documents, "retrieval": retrieval }))
        },
    )
    .await
}
