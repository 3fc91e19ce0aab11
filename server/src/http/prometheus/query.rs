//! PromQL over HTTP: `/api/v1/query` (instant), `/api/v1/query_range`, plus
//! `/api/v1/query_exemplars` (Sightline keeps no exemplars: always `[]`) and
//! `/api/v1/format_query`.
//!
//! Evaluation runs on the blocking pool, at most [`super::MAX_CONCURRENT_QUERIES`] at once,
//! under a deadline of `min(timeout parameter, limits.query_timeout_secs)`; past it the
//! request answers 503 `timeout` (the evaluation itself finishes in the background, still
//! holding its slot, so timed-out queries cannot pile up).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use sightline_query::QueryError;
use sightline_query::promql::{
    QueryResult, ResultSeries, SampleSource, StoreSource, instant_query, range_query,
};
use sightline_storage::TenantId;

use super::params::Params;
use super::{ApiError, PromState, request_params, success, tenant};
use crate::http::AppState;
use crate::otlp::metrics::format_float;

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The deadline of a request: its `timeout` parameter, capped by the configured limit.
pub fn query_timeout(st: &AppState, p: &Params) -> Result<Duration, ApiError> {
    let cap = Duration::from_secs(st.limits().query_timeout_secs);
    Ok(match p.duration("timeout")? {
        Some(ms) if ms > 0 => cap.min(Duration::from_millis(ms.unsigned_abs())),
        _ => cap,
    })
}

/// Runs `f` on the blocking pool under a query slot and the deadline.
pub async fn run_blocking<T, F>(ps: &PromState, timeout: Duration, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
{
    let deadline = tokio::time::Instant::now() + timeout;
    let permit = tokio::time::timeout_at(deadline, ps.query_slots.clone().acquire_owned())
        .await
        .map_err(|_| ApiError::timeout("query timed out waiting for an evaluation slot"))?
        .map_err(|_| ApiError::internal("query slots closed"))?;
    let task = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        f()
    });
    match tokio::time::timeout_at(deadline, task).await {
        Err(_) => Err(ApiError::timeout(
            "query timed out in expression evaluation",
        )),
        Ok(Err(e)) => Err(ApiError::internal(format!("query task failed: {e}"))),
        Ok(Ok(r)) => r,
    }
}

/// Maps an engine error onto Prometheus' error types.
pub fn query_error(e: QueryError) -> ApiError {
    match e {
        QueryError::Parse(_) => ApiError::bad_data(format!("invalid parameter \"query\": {e}")),
        QueryError::Unsupported(_) => ApiError::bad_data(e.to_string()),
        QueryError::BadRequest(m) => ApiError::bad_data(m),
        QueryError::Execution(m) => ApiError::execution(m),
        QueryError::Timeout => ApiError::timeout("query timed out in expression evaluation"),
        QueryError::Storage(s) if s.is_client_error() => ApiError::bad_data(s.to_string()),
        other => ApiError::internal(other.to_string()),
    }
}

async fn evaluate<F>(
    st: &AppState,
    ps: &PromState,
    tenant: TenantId,
    timeout: Duration,
    f: F,
) -> Result<QueryResult, ApiError>
where
    F: FnOnce(&dyn SampleSource) -> sightline_query::Result<QueryResult> + Send + 'static,
{
    let store = Arc::clone(st.store());
    run_blocking(ps, timeout, move || {
        let src = StoreSource::new(&store, tenant);
        f(&src).map_err(query_error)
    })
    .await
}

/// `GET|POST /api/v1/query`: `query`, `time` (default now), `timeout`.
pub async fn instant(
    State(st): State<AppState>,
    Extension(ps): Extension<Arc<PromState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let run = async {
        let tenant = tenant(&st, &headers)?;
        let p = request_params(&method, &headers, q.as_deref(), &body);
        let time = p.time_or("time", now_ms())?;
        let timeout = query_timeout(&st, &p)?;
        let query = p.get("query").unwrap_or("").to_owned();
        let r = evaluate(&st, &ps, tenant, timeout, move |src| {
            instant_query(src, &query, time)
        })
        .await?;
        Ok::<_, ApiError>(render(r))
    };
    match run.await {
        Ok(data) => success(&data, &[]),
        Err(e) => e.into_response(),
    }
}

/// `GET|POST /api/v1/query_range`: `query`, `start`, `end`, `step`, `timeout`.
pub async fn range(
    State(st): State<AppState>,
    Extension(ps): Extension<Arc<PromState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let run = async {
        let tenant = tenant(&st, &headers)?;
        let p = request_params(&method, &headers, q.as_deref(), &body);
        let start = p.time("start")?;
        let end = p.time("end")?;
        let step = p.duration("step")?.ok_or_else(|| {
            ApiError::bad_data("invalid parameter \"step\": cannot parse \"\" to a valid duration")
        })?;
        let timeout = query_timeout(&st, &p)?;
        let query = p.get("query").unwrap_or("").to_owned();
        let r = evaluate(&st, &ps, tenant, timeout, move |src| {
            range_query(src, &query, start, end, step)
        })
        .await?;
        Ok::<_, ApiError>(render(r))
    };
    match run.await {
        Ok(data) => success(&data, &[]),
        Err(e) => e.into_response(),
    }
}

/// `GET|POST /api/v1/query_exemplars`: checks the query and times, answers `[]`.
pub async fn exemplars(
    State(st): State<AppState>,
    method: Method,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let run = || {
        tenant(&st, &headers)?;
        let p = request_params(&method, &headers, q.as_deref(), &body);
        let now = now_ms();
        p.time_or("start", now)?;
        p.time_or("end", now)?;
        sightline_query::promql::parse(p.get("query").unwrap_or("")).map_err(query_error)?;
        Ok::<_, ApiError>(())
    };
    match run() {
        Ok(()) => success("[]", &[]),
        Err(e) => e.into_response(),
    }
}

/// `GET|POST /api/v1/format_query`: the query, pretty-printed.
pub async fn format(
    State(st): State<AppState>,
    method: Method,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let run = || {
        tenant(&st, &headers)?;
        let p = request_params(&method, &headers, q.as_deref(), &body);
        let expr =
            sightline_query::promql::parse(p.get("query").unwrap_or("")).map_err(query_error)?;
        Ok::<_, ApiError>(json_str(&expr.prettify()))
    };
    match run() {
        Ok(data) => success(&data, &[]),
        Err(e) => e.into_response(),
    }
}

/// A JSON string literal.
pub fn json_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// A Prometheus API timestamp: seconds, with up to three decimals when not whole.
pub fn format_ts(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let abs = ms.unsigned_abs();
    let (secs, frac) = (abs / 1000, abs % 1000);
    if frac == 0 {
        format!("{sign}{secs}")
    } else {
        let f = format!("{frac:03}");
        format!("{sign}{secs}.{}", f.trim_end_matches('0'))
    }
}

fn push_point(out: &mut String, t: i64, v: f64) {
    out.push('[');
    out.push_str(&format_ts(t));
    out.push_str(",\"");
    out.push_str(&format_float(v));
    out.push_str("\"]");
}

/// A label set as a JSON object, in the given (sorted) order.
pub fn push_labels(out: &mut String, labels: &[(String, String)]) {
    out.push('{');
    for (i, (k, v)) in labels.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&json_str(k));
        out.push(':');
        out.push_str(&json_str(v));
    }
    out.push('}');
}

/// The `data` object of a query answer.
pub fn render(r: QueryResult) -> String {
    let mut out = String::with_capacity(256);
    match r {
        QueryResult::Scalar(points) => {
            out.push_str("{\"resultType\":\"scalar\",\"result\":");
            let (t, v) = points.first().copied().unwrap_or((0, f64::NAN));
            push_point(&mut out, t, v);
            out.push('}');
        }
        QueryResult::String(t, s) => {
            out.push_str("{\"resultType\":\"string\",\"result\":[");
            out.push_str(&format_ts(t));
            out.push(',');
            out.push_str(&json_str(&s));
            out.push_str("]}");
        }
        QueryResult::Vector(series) => {
            out.push_str("{\"resultType\":\"vector\",\"result\":[");
            for (i, s) in series.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str("{\"metric\":");
                push_labels(&mut out, &s.labels);
                out.push_str(",\"value\":");
                let (t, v) = s.points.first().copied().unwrap_or((0, f64::NAN));
                push_point(&mut out, t, v);
                out.push('}');
            }
            out.push_str("]}");
        }
        QueryResult::Matrix(mut series) => {
            series.sort_by(|a: &ResultSeries, b: &ResultSeries| a.labels.cmp(&b.labels));
            out.push_str("{\"resultType\":\"matrix\",\"result\":[");
            for (i, s) in series.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str("{\"metric\":");
                push_labels(&mut out, &s.labels);
                out.push_str(",\"values\":[");
                for (j, (t, v)) in s.points.iter().enumerate() {
                    if j > 0 {
                        out.push(',');
                    }
                    push_point(&mut out, *t, *v);
                }
                out.push_str("]}");
            }
            out.push_str("]}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn deadline_answers_timeout_and_keeps_the_slot() {
        let ps = PromState::default();
        let r = run_blocking(&ps, Duration::from_millis(20), || {
            std::thread::sleep(Duration::from_millis(300));
            Ok(())
        })
        .await;
        assert_eq!(
            r.map_err(|e| (e.status.as_u16(), e.kind)),
            Err((503, "timeout"))
        );
        // The evaluation still runs, so it still holds its slot.
        assert_eq!(
            ps.query_slots.available_permits(),
            super::super::MAX_CONCURRENT_QUERIES - 1
        );
        let ok = run_blocking(&ps, Duration::from_secs(5), || Ok(7)).await;
        assert_eq!(ok, Ok(7));
    }

    #[test]
    fn timestamps_like_prometheus() {
        assert_eq!(format_ts(4000), "4");
        assert_eq!(format_ts(1_435_781_451_781), "1435781451.781");
        assert_eq!(format_ts(1500), "1.5");
        assert_eq!(format_ts(1050), "1.05");
        assert_eq!(format_ts(-1500), "-1.5");
        assert_eq!(format_ts(0), "0");
    }

    #[test]
    fn shapes() {
        assert_eq!(
            render(QueryResult::Scalar(vec![(4000, 2.0)])),
            r#"{"resultType":"scalar","result":[4,"2"]}"#
        );
        assert_eq!(
            render(QueryResult::String(1500, "a\"b".into())),
            r#"{"resultType":"string","result":[1.5,"a\"b"]}"#
        );
        let s = |v: f64| ResultSeries {
            labels: vec![("__name__".into(), "up".into()), ("job".into(), "x".into())],
            points: vec![(1000, v)],
        };
        assert_eq!(
            render(QueryResult::Vector(vec![s(f64::NAN), s(f64::INFINITY)])),
            r#"{"resultType":"vector","result":[{"metric":{"__name__":"up","job":"x"},"value":[1,"NaN"]},{"metric":{"__name__":"up","job":"x"},"value":[1,"+Inf"]}]}"#
        );
        assert_eq!(
            render(QueryResult::Matrix(vec![ResultSeries {
                labels: vec![],
                points: vec![(1000, f64::NEG_INFINITY), (2000, 0.25)],
            }])),
            r#"{"resultType":"matrix","result":[{"metric":{},"values":[[1,"-Inf"],[2,"0.25"]]}]}"#
        );
    }
}
