//! PromQL over HTTP: `/api/v1/query` (instant), `/api/v1/query_range`, plus
//! `/api/v1/query_exemplars` (Sightline keeps no exemplars: always `[]`) and
//! `/api/v1/format_query`.
//!
//! Parsing and evaluation run through the [`crate::http::Runner`]: on the blocking pool, within
//! the tenant's share of `max_concurrent_queries`, under a deadline of `min(timeout
//! parameter, limits.query_timeout_secs)` that the engine checks per step and series; past it
//! the request answers 503 `timeout` and the evaluation stops.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use sightline_query::QueryError;
use sightline_query::promql::{
    Budget, CacheStats, QueryResult, ResultSeries, SampleSource, StoreSource, instant_query,
    range_query,
};
use sightline_storage::TenantId;

use super::params::Params;
use super::{ApiError, request_params, success, tenant};
use crate::http::AppState;
use crate::otlp::metrics::format_float;

/// The deadline of a request: its `timeout` parameter, capped by the configured limit.
pub fn query_timeout(st: &AppState, p: &Params) -> Result<Duration, ApiError> {
    let asked = p
        .duration("timeout")?
        .filter(|ms| *ms > 0)
        .map(|ms| Duration::from_millis(ms.unsigned_abs()));
    Ok(st.runner.timeout(asked))
}

/// Maps an engine error onto Prometheus' error types: the shared classification, with the
/// parser's message prefixed as Prometheus does.
pub fn query_error(e: QueryError) -> ApiError {
    match e {
        QueryError::Parse(_) => ApiError::bad_data(format!("invalid parameter \"query\": {e}")),
        other => other.into(),
    }
}

async fn evaluate<F>(
    st: &AppState,
    tenant: TenantId,
    timeout: Duration,
    f: F,
) -> Result<QueryResult, ApiError>
where
    F: FnOnce(&dyn SampleSource, &Budget) -> sightline_query::Result<QueryResult> + Send + 'static,
{
    let store = Arc::clone(st.store());
    let t = tenant.clone();
    let max_samples = st.limits().max_query_samples;
    st.runner
        .run(&tenant, timeout, move |deadline| {
            let src = StoreSource::new(&store, t);
            let budget = Budget::until(deadline.clone()).with_max_samples(max_samples);
            f(&src, &budget).map_err(query_error)
        })
        .await
}

/// `GET|POST /api/v1/query`: `query`, `time` (default now), `timeout`.
pub async fn instant(
    State(st): State<AppState>,
    method: Method,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let run = async {
        let tenant = tenant(&st, &headers)?;
        let p = request_params(&method, &headers, q.as_deref(), &body);
        let time = p.time_or("time", st.now().as_millis())?;
        let timeout = query_timeout(&st, &p)?;
        let query = p.get("query").unwrap_or("").to_owned();
        let r = evaluate(&st, tenant, timeout, move |src, budget| {
            instant_query(src, &query, time, budget)
        })
        .await?;
        Ok::<_, ApiError>(render(r))
    };
    match run.await {
        Ok(data) => success(&data, &[]),
        Err(e) => e.into_response(),
    }
}

/// `GET|POST /api/v1/query_range`: `query`, `start`, `end`, `step`, `timeout`, `nocache`.
/// Answered through the [`sightline_query::promql::ResultCache`]: steps an earlier request
/// computed are taken from it, unless `nocache=1` (as in VictoriaMetrics).
pub async fn range(
    State(st): State<AppState>,
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
        // VictoriaMetrics' `nocache=1`: evaluate every step, keep nothing.
        let nocache = matches!(p.get("nocache"), Some("1" | "true"));
        let cache = Arc::clone(&st.query_cache);
        let now = st.now().as_millis();
        let t = tenant.clone();
        let r = evaluate(&st, tenant, timeout, move |src, budget| {
            if nocache {
                range_query(src, &query, start, end, step, budget)
            } else {
                cache.range_query(src, &t, &query, start, end, step, now, budget)
            }
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
    let run = async {
        let tenant = tenant(&st, &headers)?;
        let p = request_params(&method, &headers, q.as_deref(), &body);
        let now = st.now().as_millis();
        p.time_or("start", now)?;
        p.time_or("end", now)?;
        let timeout = query_timeout(&st, &p)?;
        let query = p.get("query").unwrap_or("").to_owned();
        st.runner
            .run(&tenant, timeout, move |_| {
                sightline_query::promql::parse(&query).map_err(query_error)?;
                Ok(())
            })
            .await
    };
    match run.await {
        Ok(()) => success("[]", &[]),
        Err(e) => e.into_response(),
    }
}

/// `GET|POST /api/v1/format_query`: the query, pretty-printed (parsed and printed on the
/// runner, like every query).
pub async fn format(
    State(st): State<AppState>,
    method: Method,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let run = async {
        let tenant = tenant(&st, &headers)?;
        let p = request_params(&method, &headers, q.as_deref(), &body);
        let timeout = query_timeout(&st, &p)?;
        let query = p.get("query").unwrap_or("").to_owned();
        st.runner
            .run(&tenant, timeout, move |_| {
                let expr = sightline_query::promql::parse(&query).map_err(query_error)?;
                Ok(json_str(&expr.prettify()))
            })
            .await
    };
    match run.await {
        Ok(data) => success(&data, &[]),
        Err(e) => e.into_response(),
    }
}

/// The `sightline_query_cache_*` families in the Prometheus text format.
pub fn render_cache_metrics(c: &CacheStats, o: &mut String) {
    use std::fmt::Write;
    let families: [(&str, &str, &str, u64); 7] = [
        (
            "sightline_query_cache_hits_total",
            "counter",
            "Range queries answered at least in part from the query cache.",
            c.hits,
        ),
        (
            "sightline_query_cache_misses_total",
            "counter",
            "Cacheable range queries evaluated in full.",
            c.misses,
        ),
        (
            "sightline_query_cache_steps_served_total",
            "counter",
            "Range query steps answered from the query cache.",
            c.steps_served,
        ),
        (
            "sightline_query_cache_steps_evaluated_total",
            "counter",
            "Range query steps evaluated by cacheable queries.",
            c.steps_evaluated,
        ),
        (
            "sightline_query_cache_invalidations_total",
            "counter",
            "Late appends and removals that dropped cached steps.",
            c.invalidations,
        ),
        (
            "sightline_query_cache_bytes",
            "gauge",
            "Bytes of range query answers cached.",
            c.bytes as u64,
        ),
        (
            "sightline_query_cache_entries",
            "gauge",
            "Range query answers cached.",
            c.entries as u64,
        ),
    ];
    for (name, kind, help, v) in families {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}");
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
