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
//!   "start", "end", "step", "max_lag", "gaps"?}` (seconds, each query must yield one series;
//!   a step where either has no value is refused, or with `"gaps": "longest_run"` the test
//!   runs on the longest run of steps where both have one, named in the answer's `range`).
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
    #[serde(default)]
    gaps: Gaps,
}

/// What a PromQL Granger request does with steps where a series has no value.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Gaps {
    /// Refuse the request, naming the first such step (400).
    #[default]
    Refuse,
    /// Test on the longest run of consecutive steps where both series have a value.
    LongestRun,
}

/// The steps `[first, last]` the test ran on, echoed in the answer as `range`.
#[derive(Debug, serde::Serialize, PartialEq)]
struct FittedRange {
    /// First step, Unix seconds.
    start: f64,
    /// Last step, Unix seconds.
    end: f64,
    /// Steps (points per series).
    points: usize,
    /// Steps of the requested range left out because a series had no value there.
    dropped: usize,
}

fn default_alpha() -> f64 {
    0.05
}

/// The single series a query yields, as values on the step grid (NaN: no value).
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
    Ok(out)
}

/// The aligned, gap-free stretch of `cause` and `effect` (`[first, last]` step indices) the
/// test runs on: all steps, or with [`Gaps::LongestRun`] the longest run where both have a
/// value (the earliest of equal runs).
fn gap_free(
    cause: &[f64],
    effect: &[f64],
    gaps: Gaps,
    start_ms: i64,
    step_ms: i64,
) -> Result<(usize, usize), SeriesError> {
    debug_assert_eq!(cause.len(), effect.len(), "both on the same grid");
    let missing = |i: usize| cause[i].is_nan() || effect[i].is_nan();
    let n = cause.len();
    match gaps {
        Gaps::Refuse => match (0..n).find(|&i| missing(i)) {
            Some(i) => Err(SeriesError::Gap {
                what: if cause[i].is_nan() {
                    "cause_query"
                } else {
                    "effect_query"
                }
                .to_owned(),
                step: i,
                secs: (start_ms + i as i64 * step_ms) / 1000,
            }),
            None => Ok((0, n.saturating_sub(1))),
        },
        Gaps::LongestRun => {
            let (mut best, mut run_start): (Option<(usize, usize)>, Option<usize>) = (None, None);
            for i in 0..n {
                if missing(i) {
                    run_start = None;
                    continue;
                }
                let s = *run_start.get_or_insert(i);
                if best.is_none_or(|(a, b)| i - s > b - a) {
                    best = Some((s, i));
                }
            }
            best.ok_or(SeriesError::NoCommonStep)
        }
    }
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
    #[error(
        "{what} has no value at step {step} (t={secs} s); choose a range without gaps, or send \"gaps\": \"longest_run\""
    )]
    Gap {
        what: String,
        step: usize,
        secs: i64,
    },
    /// No step where both series have a value.
    #[error("cause_query and effect_query have no step with a value in common in this range")]
    NoCommonStep,
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
        let mut fitted = None;
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
            let (cause, effect) = (
                eval(&q.cause_query, "cause_query")?,
                eval(&q.effect_query, "effect_query")?,
            );
            let (first, last) = gap_free(&cause, &effect, q.gaps, start_ms, step_ms)
                .map_err(|e| ApiError::bad_data(e.to_string()))?;
            let secs = |i: usize| (start_ms + i as i64 * step_ms) as f64 / 1000.0;
            fitted = Some(FittedRange {
                start: secs(first),
                end: secs(last),
                points: last + 1 - first,
                dropped: n - (last + 1 - first),
            });
            GrangerRequest {
                cause: cause[first..=last].to_vec(),
                effect: effect[first..=last].to_vec(),
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
        let mut out = serde_json::to_value(res).map_err(|e| ApiError::internal(e.to_string()))?;
        if let (Some(f), Some(o)) = (fitted, out.as_object_mut()) {
            let f = serde_json::to_value(f).map_err(|e| ApiError::internal(e.to_string()))?;
            o.insert("range".into(), f);
        }
        Ok(out)
    };
    answer(&st, &tenant, work).await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const NAN: f64 = f64::NAN;

    #[test]
    fn gaps_are_refused_or_cut_to_the_longest_common_run() {
        let cause = [1.0, 2.0, NAN, 4.0, 5.0, 6.0, 7.0, 8.0];
        let effect = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, NAN, 8.0];
        let e = gap_free(&cause, &effect, Gaps::Refuse, 10_000, 60_000).unwrap_err();
        assert!(
            matches!(&e, SeriesError::Gap { what, step: 2, secs: 130 } if what == "cause_query"),
            "{e}"
        );
        // Runs where both have values: [0, 1], [3, 5], [7]: the longest is steps 3..=5.
        assert_eq!(
            gap_free(&cause, &effect, Gaps::LongestRun, 10_000, 60_000).unwrap(),
            (3, 5)
        );
        // No gap: every step, either way.
        let full = [1.0, 2.0, 3.0];
        for g in [Gaps::Refuse, Gaps::LongestRun] {
            assert_eq!(gap_free(&full, &full, g, 0, 1).unwrap(), (0, 2));
        }
        // Equal runs: the earliest.
        let a = [1.0, NAN, 1.0];
        assert_eq!(gap_free(&a, &a, Gaps::LongestRun, 0, 1).unwrap(), (0, 0));
        let none = [NAN, NAN];
        assert!(matches!(
            gap_free(&none, &a[..2], Gaps::LongestRun, 0, 1),
            Err(SeriesError::NoCommonStep)
        ));
    }
}
