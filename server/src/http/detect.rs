//! The detect calculators over HTTP (JSON in, JSON out):
//!
//! * `POST /api/v1/detect/entropy`: `{"logprobs": {"content": [...]}, "options": {..}}` (the
//!   OpenAI logprobs shape) -> token entropy and uncertainty summary;
//! * `POST /api/v1/detect/hallucination`: `{"answer", "documents": [{"id", "text"}],
//!   "logprobs"?, "options"?}` -> hallucination index with per-sentence evidence, as a
//!   `gen_ai.evaluation.result`-style record;
//! * `POST /api/v1/detect/granger`: either inline series `{"cause": [..], "effect": [..],
//!   "max_lag": 4}` (statsmodels' `grangercausalitytests` numbers, no differencing unless
//!   `"difference": "auto"`), or PromQL over stored metrics `{"cause_query", "effect_query",
//!   "start", "end", "step", "max_lag"}` (seconds, each query must yield one series).
//!
//! Errors are `{"status": "error", "error": "..."}` with 400 for malformed or degenerate input.
//! With auth on, a valid bearer token is required; stored data is read from the caller's tenant.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;
use sightline_detect::entropy::{UncertaintyOptions, response_uncertainty};
use sightline_detect::granger::{Differencing, GrangerRequest, granger};
use sightline_detect::hallucination::{HallucinationRequest, hallucination_index};
use sightline_detect::logprobs::ChoiceLogprobs;
use sightline_query::promql::{QueryResult, StoreSource, range_query};

use super::AppState;

/// Longest series accepted by the Granger endpoint.
pub const MAX_GRANGER_POINTS: usize = 1_000_000;

/// The routes of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/detect/entropy", post(entropy))
        .route("/api/v1/detect/hallucination", post(hallucination))
        .route("/api/v1/detect/granger", post(granger_handler))
}

/// An error answer: status plus message, rendered as `{"status": "error", "error": ...}`.
struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        super::api_error(self.0, self.1)
    }
}

fn error(status: StatusCode, msg: impl std::fmt::Display) -> ApiError {
    ApiError(status, msg.to_string())
}

fn tenant(st: &AppState, headers: &HeaderMap) -> Result<sightline_storage::TenantId, ApiError> {
    super::request_tenant(st, headers).map_err(|e| error(StatusCode::UNAUTHORIZED, e))
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| error(StatusCode::BAD_REQUEST, format!("invalid JSON: {e}")))
}

#[derive(Deserialize)]
struct EntropyRequest {
    logprobs: ChoiceLogprobs,
    #[serde(default)]
    options: UncertaintyOptions,
}

async fn entropy(State(st): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = tenant(&st, &headers) {
        return r.into_response();
    }
    let req: EntropyRequest = match parse(&body) {
        Ok(r) => r,
        Err(r) => return r.into_response(),
    };
    match response_uncertainty(&req.logprobs, &req.options) {
        Ok(u) => axum::Json(u).into_response(),
        Err(e) => error(StatusCode::BAD_REQUEST, e).into_response(),
    }
}

async fn hallucination(State(st): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = tenant(&st, &headers) {
        return r.into_response();
    }
    let req: HallucinationRequest = match parse(&body) {
        Ok(r) => r,
        Err(r) => return r.into_response(),
    };
    match tokio::task::spawn_blocking(move || hallucination_index(&req)).await {
        Ok(Ok(report)) => axum::Json(report).into_response(),
        Ok(Err(e)) => error(StatusCode::BAD_REQUEST, e).into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
    }
}

#[derive(Deserialize)]
struct QueryGranger {
    cause_query: String,
    effect_query: String,
    start: f64,
    end: f64,
    step: f64,
    max_lag: usize,
    #[serde(default)]
    difference: Differencing,
    #[serde(default = "default_alpha")]
    alpha: f64,
}

fn default_alpha() -> f64 {
    0.05
}

/// The single series a query yields, as values on the step grid (missing steps fail: Granger
/// needs aligned, gap-free series).
fn one_series(
    result: QueryResult,
    what: &str,
    n: usize,
    start_ms: i64,
    step_ms: i64,
) -> Result<Vec<f64>, String> {
    let series = match result {
        QueryResult::Matrix(m) => m,
        _ => return Err(format!("{what} did not evaluate to a series")),
    };
    let [s] = series.as_slice() else {
        return Err(format!(
            "{what} must yield exactly one series, got {}; aggregate it (e.g. sum(...))",
            series.len()
        ));
    };
    let mut out = vec![f64::NAN; n];
    for &(t, v) in &s.points {
        let i = ((t - start_ms) / step_ms) as usize;
        if i < n {
            out[i] = v;
        }
    }
    if let Some(i) = out.iter().position(|v| v.is_nan()) {
        return Err(format!(
            "{what} has no value at step {i} (t={} s); choose a range without gaps",
            (start_ms + i as i64 * step_ms) / 1000
        ));
    }
    Ok(out)
}

async fn granger_handler(State(st): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let tenant = match tenant(&st, &headers) {
        Ok(t) => t,
        Err(r) => return r.into_response(),
    };
    let value: serde_json::Value = match parse(&body) {
        Ok(v) => v,
        Err(r) => return r.into_response(),
    };
    let store = st.store().clone();
    let work = move || -> Result<serde_json::Value, ApiError> {
        let req: GrangerRequest = if value.get("cause_query").is_some() {
            let q: QueryGranger =
                serde_json::from_value(value).map_err(|e| error(StatusCode::BAD_REQUEST, e))?;
            if q.step.is_nan() || q.step <= 0.0 || q.end.is_nan() || q.end <= q.start {
                return Err(error(
                    StatusCode::BAD_REQUEST,
                    "need start < end and step > 0 (seconds)",
                ));
            }
            let (start_ms, end_ms, step_ms) = (
                (q.start * 1000.0) as i64,
                (q.end * 1000.0) as i64,
                ((q.step * 1000.0) as i64).max(1),
            );
            let n = ((end_ms - start_ms) / step_ms + 1) as usize;
            let src = StoreSource::new(&store, tenant);
            let run = |query: &str, what: &str| {
                range_query(&src, query, start_ms, end_ms, step_ms)
                    .map_err(|e| error(StatusCode::BAD_REQUEST, format!("{what}: {e}")))
                    .and_then(|r| {
                        one_series(r, what, n, start_ms, step_ms)
                            .map_err(|e| error(StatusCode::BAD_REQUEST, e))
                    })
            };
            GrangerRequest {
                cause: run(&q.cause_query, "cause_query")?,
                effect: run(&q.effect_query, "effect_query")?,
                max_lag: q.max_lag,
                difference: q.difference,
                alpha: q.alpha,
            }
        } else {
            serde_json::from_value(value)
                .map_err(|e| error(StatusCode::BAD_REQUEST, format!("invalid request: {e}")))?
        };
        if req.cause.len() > MAX_GRANGER_POINTS || req.effect.len() > MAX_GRANGER_POINTS {
            return Err(error(
                StatusCode::BAD_REQUEST,
                format!("series longer than {MAX_GRANGER_POINTS} points"),
            ));
        }
        let res = granger(&req).map_err(|e| error(StatusCode::BAD_REQUEST, e))?;
        serde_json::to_value(res).map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, e))
    };
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(v)) => axum::Json(v).into_response(),
        Ok(Err(r)) => r.into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
    }
}
