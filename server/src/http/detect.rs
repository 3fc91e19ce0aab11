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
//! Errors are `{"status": "error", "errorType": .., "error": ".."}` with 400 for malformed or
//! degenerate input, 413 for hallucination inputs over the grounding work limit, 415 for a body that is not
//! JSON, 503 past the deadline. Every computation runs through the [`super::Runner`]. With auth
//! on, a valid bearer token is required; stored data is read from the caller's tenant.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;
use sightline_detect::entropy::{UncertaintyOptions, response_uncertainty};
use sightline_detect::granger::{Differencing, GrangerRequest, granger};
use sightline_detect::hallucination::{HallucinationRequest, check_work, hallucination_index};
use sightline_detect::logprobs::ChoiceLogprobs;
use sightline_query::promql::{Budget, QueryResult, StoreSource, range_query};
use sightline_storage::{Deadline, TenantId};

use super::{ApiError, AppState, Tenant, guard};

/// Longest series accepted by the Granger endpoint.
pub const MAX_GRANGER_POINTS: usize = 1_000_000;
/// The routes of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/detect/entropy", post(entropy))
        .route("/api/v1/detect/hallucination", post(hallucination))
        .route("/api/v1/detect/granger", post(granger_handler))
        .route_layer(axum::middleware::from_fn(guard::require_json))
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::bad_data(format!("invalid JSON: {e}")))
}

/// Runs a calculator through [`AppState::run`] and answers its result as JSON.
async fn answer<T, F>(st: &AppState, tenant: &TenantId, work: F) -> Result<Response, ApiError>
where
    T: serde::Serialize + Send + 'static,
    F: FnOnce(&Deadline) -> Result<T, ApiError> + Send + 'static,
{
    Ok(axum::Json(st.run(tenant, work).await?).into_response())
}

#[derive(Deserialize)]
struct EntropyRequest {
    logprobs: ChoiceLogprobs,
    #[serde(default)]
    options: UncertaintyOptions,
}

async fn entropy(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    body: Bytes,
) -> Result<Response, ApiError> {
    answer(&st, &tenant, move |_| {
        let req: EntropyRequest = parse(&body)?;
        response_uncertainty(&req.logprobs, &req.options)
            .map_err(|e| ApiError::bad_data(e.to_string()))
    })
    .await
}

/// Refuses hallucination requests whose scoring would take more than about a second
/// (`sightline_detect::hallucination::check_work`) with 413.
fn check_hallucination_size(req: &HallucinationRequest) -> Result<(), ApiError> {
    check_work(&req.answer, &req.documents)
        .map_err(|e| ApiError::new(super::ErrorKind::TooLarge, e.to_string()))
}

async fn hallucination(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    body: Bytes,
) -> Result<Response, ApiError> {
    answer(&st, &tenant, move |_| {
        let req: HallucinationRequest = parse(&body)?;
        check_hallucination_size(&req)?;
        hallucination_index(&req).map_err(|e| ApiError::bad_data(e.to_string()))
    })
    .await
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
) -> Result<Vec<f64>, SeriesError> {
    let series = match result {
        QueryResult::Matrix(m) => m,
        _ => return Err(SeriesError::NotSeries(what.to_owned())),
    };
    let [s] = series.as_slice() else {
        return Err(SeriesError::NotOne {
            what: what.to_owned(),
            got: series.len(),
        });
    };
    let mut out = vec![f64::NAN; n];
    for &(t, v) in &s.points {
        let i = ((t - start_ms) / step_ms) as usize;
        if i < n {
            out[i] = v;
        }
    }
    if let Some(i) = out.iter().position(|v| v.is_nan()) {
        return Err(SeriesError::Gap {
            what: what.to_owned(),
            step: i,
            secs: (start_ms + i as i64 * step_ms) / 1000,
        });
    }
    Ok(out)
}

/// Why a Granger query's answer is not one gap-free series (400).
#[derive(Debug, thiserror::Error)]
enum SeriesError {
    /// A scalar or a string.
    #[error("{0} did not evaluate to a series")]
    NotSeries(String),
    /// None or several series.
    #[error("{what} must yield exactly one series, got {got}; aggregate it (e.g. sum(...))")]
    NotOne { what: String, got: usize },
    /// A step without a value.
    #[error("{what} has no value at step {step} (t={secs} s); choose a range without gaps")]
    Gap {
        what: String,
        step: usize,
        secs: i64,
    },
}

async fn granger_handler(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    body: Bytes,
) -> Result<Response, ApiError> {
    let store = st.store().clone();
    let t = tenant.clone();
    let max_samples = st.limits().max_query_samples;
    let work = move |deadline: &Deadline| -> Result<serde_json::Value, ApiError> {
        let budget = Budget::until(deadline.clone()).with_max_samples(max_samples);
        let value: serde_json::Value = parse(&body)?;
        let req: GrangerRequest = if value.get("cause_query").is_some() {
            let q: QueryGranger = serde_json::from_value(value)
                .map_err(|e| ApiError::bad_data(format!("invalid request: {e}")))?;
            if !(q.step > 0.0 && q.end > q.start && q.start.is_finite() && q.end.is_finite()) {
                return Err(ApiError::bad_data(
                    "need start < end and step > 0 (seconds)",
                ));
            }
            let (start_ms, end_ms, step_ms) = (
                (q.start * 1000.0) as i64,
                (q.end * 1000.0) as i64,
                ((q.step * 1000.0) as i64).max(1),
            );
            let n = usize::try_from((end_ms - start_ms) / step_ms + 1).unwrap_or(usize::MAX);
            if n > MAX_GRANGER_POINTS {
                return Err(ApiError::bad_data(format!(
                    "{n} steps; the limit is {MAX_GRANGER_POINTS}"
                )));
            }
            let src = StoreSource::new(&store, t);
            let eval = |query: &str, what: &str| {
                range_query(&src, query, start_ms, end_ms, step_ms, &budget)
                    .map_err(|e| ApiError::from(e).context(what))
                    .and_then(|r| {
                        one_series(r, what, n, start_ms, step_ms)
                            .map_err(|e| ApiError::bad_data(e.to_string()))
                    })
            };
            GrangerRequest {
                cause: eval(&q.cause_query, "cause_query")?,
                effect: eval(&q.effect_query, "effect_query")?,
                max_lag: q.max_lag,
                difference: q.difference,
                alpha: q.alpha,
            }
        } else {
            serde_json::from_value(value)
                .map_err(|e| ApiError::bad_data(format!("invalid request: {e}")))?
        };
        if req.cause.len() > MAX_GRANGER_POINTS || req.effect.len() > MAX_GRANGER_POINTS {
            return Err(ApiError::bad_data(format!(
                "series longer than {MAX_GRANGER_POINTS} points"
            )));
        }
        let res = granger(&req).map_err(|e| ApiError::bad_data(e.to_string()))?;
        serde_json::to_value(res).map_err(|e| ApiError::internal(e.to_string()))
    };
    answer(&st, &tenant, work).await
}
