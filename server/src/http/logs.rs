//! The native log API (JSON):
//!
//! * `GET|POST /api/v1/logs/search`: lines matching a full-text query, attribute filters,
//!   severity, trace/span id and time range, newest first (`direction=forward` for oldest
//!   first), at most `limit` (default 100, max 5000), the next page after `cursor` (the
//!   previous answer's `next_cursor`);
//! * `GET|POST /api/v1/logs/histogram`: counts per `step` bucket over the range, optionally
//!   grouped (`group_by=severity` or an attribute key).
//!
//! Parameters come from the query string, a form body or a JSON object body (see
//! docs/logs.md). `explain=true` adds the storage scan statistics. Errors are
//! [`super::ApiError`]s: 400 for bad parameters, 401 for a missing or unknown token, 503 past
//! the deadline, 500 when storage fails. Parsing and searches run through the
//! [`super::Runner`].

use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use sightline_query::QueryError;
use sightline_query::logs::{
    Direction, HistogramGroup, HistogramRequest, LogCursor, LogFilter, SearchRequest, histogram,
    search_after,
};
use sightline_query::time::DurationDialect;
use sightline_storage::{
    Deadline, LogRecord, MatchOp, Matcher, SpanId, StorageError, TenantId, TimeRange, TraceId,
    UnixNanos,
};

use super::params::{self, RangeError, get as param};
use super::{ApiError, AppState};

/// Default time span searched when `start` is absent: one hour before `end`.
const DEFAULT_SPAN_NS: i64 = 3_600 * 1_000_000_000;

/// The routes of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/logs/search",
            get(search_handler).post(search_handler),
        )
        .route(
            "/api/v1/logs/histogram",
            get(histogram_handler).post(histogram_handler),
        )
}

fn bad(msg: impl std::fmt::Display) -> ApiError {
    ApiError::bad_data(msg.to_string())
}

/// A log request parameter the API refuses (400).
#[derive(Debug, thiserror::Error)]
pub(crate) enum LogParamError {
    /// `start`, `end` or `since`.
    #[error(transparent)]
    Range(#[from] RangeError),
    /// A `filter` without an operator.
    #[error("filter {0:?}: expected key=value, key!=value, key=~re or key!~re")]
    FilterSyntax(String),
    /// A `filter` whose operator is not `=`, `!=`, `=~` or `!~`.
    #[error("filter {0:?}: unknown operator")]
    FilterOperator(String),
    /// A `filter` without a key.
    #[error("filter {0:?}: empty key")]
    FilterKey(String),
    /// A `filter` whose double-quoted value is not a JSON string.
    #[error("filter {filter:?}: bad quoted value: {source}")]
    FilterQuoted {
        /// The filter.
        filter: String,
        /// What JSON said.
        source: serde_json::Error,
    },
    /// A JSON `filter` object that does not parse.
    #[error("filter {filter}: {source}")]
    FilterJson {
        /// The filter.
        filter: String,
        /// What JSON said.
        source: serde_json::Error,
    },
    /// A JSON `filter` object without `key`.
    #[error("filter {0}: missing key")]
    FilterJsonKey(String),
    /// A JSON `filter` object with an unknown `op`.
    #[error("filter {filter}: unknown op {op:?}")]
    FilterJsonOperator {
        /// The filter.
        filter: String,
        /// Its `op`.
        op: String,
    },
    /// A matcher the store refuses (an invalid regex).
    #[error(transparent)]
    Matcher(StorageError),
    /// A numeric `min_severity` outside OpenTelemetry's range.
    #[error("min_severity {0} outside 0..=24")]
    SeverityRange(i32),
    /// A `min_severity` name that is not a severity.
    #[error("unknown severity {0:?}: use 1-24 or trace/debug/info/warn/error/fatal")]
    SeverityName(String),
    /// A `trace_id` that is not 32 hex digits.
    #[error("trace_id: {0}")]
    TraceId(StorageError),
    /// A `span_id` that is not 16 hex digits.
    #[error("span_id: {0}")]
    SpanId(StorageError),
}

/// Parses one attribute filter: `key op value` with `op` one of `=`, `!=`, `=~`, `!~`; the
/// value may be double-quoted (JSON string escapes).
pub(crate) fn parse_filter(s: &str) -> Result<Matcher, LogParamError> {
    let key_end = s
        .find(['=', '!'])
        .ok_or_else(|| LogParamError::FilterSyntax(s.to_owned()))?;
    let key = s[..key_end].trim();
    let rest = &s[key_end..];
    let (op, value) = if let Some(v) = rest.strip_prefix("=~") {
        (MatchOp::Regex, v)
    } else if let Some(v) = rest.strip_prefix("!~") {
        (MatchOp::NotRegex, v)
    } else if let Some(v) = rest.strip_prefix("!=") {
        (MatchOp::NotEq, v)
    } else if let Some(v) = rest.strip_prefix('=') {
        (MatchOp::Eq, v)
    } else {
        return Err(LogParamError::FilterOperator(s.to_owned()));
    };
    if key.is_empty() {
        return Err(LogParamError::FilterKey(s.to_owned()));
    }
    let value = value.trim();
    let value = if value.starts_with('"') {
        serde_json::from_str::<String>(value).map_err(|source| LogParamError::FilterQuoted {
            filter: s.to_owned(),
            source,
        })?
    } else {
        value.to_owned()
    };
    Matcher::new(key, op, value).map_err(LogParamError::Matcher)
}

fn severity_number(s: &str) -> Result<i32, LogParamError> {
    if let Ok(n) = s.parse::<i32>() {
        return if (0..=24).contains(&n) {
            Ok(n)
        } else {
            Err(LogParamError::SeverityRange(n))
        };
    }
    Ok(match s.to_ascii_lowercase().as_str() {
        "trace" => 1,
        "debug" => 5,
        "info" => 9,
        "warn" | "warning" => 13,
        "error" => 17,
        "fatal" | "critical" => 21,
        _ => return Err(LogParamError::SeverityName(s.to_owned())),
    })
}

fn filter_from(p: &[(String, String)], now: UnixNanos) -> Result<LogFilter, LogParamError> {
    let (start, end) = params::time_range(p, DEFAULT_SPAN_NS, now)?;
    let mut f = LogFilter::new(TimeRange {
        start: UnixNanos(start),
        end: UnixNanos(end.saturating_add(1)),
    });
    f.full_text = param(p, "query")
        .or_else(|| param(p, "q"))
        .map(str::to_owned);
    for raw in params::all(p, "filter") {
        if raw.trim_start().starts_with('{') {
            // A JSON object {"key", "op", "value"} inside a JSON body.
            let v: Value =
                serde_json::from_str(raw).map_err(|source| LogParamError::FilterJson {
                    filter: raw.to_owned(),
                    source,
                })?;
            let field = |n: &str| v.get(n).and_then(Value::as_str).map(str::to_owned);
            let key = field("key").ok_or_else(|| LogParamError::FilterJsonKey(raw.to_owned()))?;
            let op = match field("op").as_deref().unwrap_or("=") {
                "=" => MatchOp::Eq,
                "!=" => MatchOp::NotEq,
                "=~" => MatchOp::Regex,
                "!~" => MatchOp::NotRegex,
                o => {
                    return Err(LogParamError::FilterJsonOperator {
                        filter: raw.to_owned(),
                        op: o.to_owned(),
                    });
                }
            };
            let value = field("value").unwrap_or_default();
            f.matchers
                .push(Matcher::new(key, op, value).map_err(LogParamError::Matcher)?);
        } else {
            f.matchers.push(parse_filter(raw)?);
        }
    }
    if let Some(s) = param(p, "service") {
        f.matchers.push(Matcher::eq("service.name", s));
    }
    f.severity_text = param(p, "severity").map(str::to_owned);
    f.min_severity = param(p, "min_severity").map(severity_number).transpose()?;
    f.trace_id = param(p, "trace_id")
        .map(|t| TraceId::from_hex(t).map_err(LogParamError::TraceId))
        .transpose()?;
    f.span_id = param(p, "span_id")
        .map(|t| SpanId::from_hex(t).map_err(LogParamError::SpanId))
        .transpose()?;
    Ok(f)
}

fn explain_wanted(p: &[(String, String)]) -> bool {
    matches!(param(p, "explain"), Some("true" | "1"))
}

fn attrs_json(a: &sightline_storage::Attributes) -> Value {
    Value::Object(a.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
}

/// The JSON form of one line.
pub(crate) fn line_json(r: &LogRecord) -> Value {
    json!({
        "time_unix_nano": r.time.0.to_string(),
        "observed_time_unix_nano": r.observed_time.0.to_string(),
        "severity_number": r.severity_number,
        "severity_text": r.severity_text,
        "body": r.body.to_json(),
        "trace_id": r.trace_id.map(|t| t.to_hex()),
        "span_id": r.span_id.map(|s| s.to_hex()),
        "service_name": r.service_name,
        "scope_name": r.scope_name,
        "event_name": r.event_name,
        "attributes": attrs_json(&r.attributes),
        "resource_attributes": attrs_json(&r.resource_attributes),
    })
}

async fn prepare(
    st: &AppState,
    method: &Method,
    headers: &HeaderMap,
    query: Option<String>,
    body: &[u8],
) -> Result<(TenantId, Vec<(String, String)>), ApiError> {
    let tenant = super::request_tenant(st, headers)?;
    let p = params::collect(method, headers, query.as_deref(), body).map_err(bad)?;
    Ok((tenant, p))
}

/// Runs the parsing and the search through the runner and answers the native envelope.
async fn run<F>(st: &AppState, tenant: &TenantId, work: F) -> Response
where
    F: FnOnce(&Deadline) -> Result<Value, ApiError> + Send + 'static,
{
    super::answer(st, tenant, work)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

fn query_err(e: QueryError) -> ApiError {
    e.into()
}

async fn search_handler(
    State(st): State<AppState>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    let (tenant, p) = match prepare(&st, &method, &headers, query, &body).await {
        Ok(x) => x,
        Err(e) => return e.into_response(),
    };
    let store = st.store().clone();
    let t = tenant.clone();
    run(&st, &t, move |deadline| {
        let mut filter = filter_from(&p, store.now()).map_err(bad)?;
        filter.deadline = deadline.clone();
        let limit = match param(&p, "limit") {
            Some(l) => l
                .parse::<usize>()
                .map_err(|_| bad(format!("invalid limit {l:?}")))?,
            None => 100,
        };
        let direction = match param(&p, "direction") {
            None | Some("backward") => Direction::Backward,
            Some("forward") => Direction::Forward,
            Some(d) => {
                return Err(bad(format!(
                    "invalid direction {d:?}: use backward or forward"
                )));
            }
        };
        let after = param(&p, "cursor")
            .map(LogCursor::parse)
            .transpose()
            .map_err(query_err)?;
        let (r, next) = search_after(
            &store,
            &tenant,
            &SearchRequest {
                filter,
                limit,
                direction,
            },
            after.as_ref(),
        )
        .map_err(query_err)?;
        let mut v = json!({
            "lines": r.lines.iter().map(line_json).collect::<Vec<_>>(),
            "matched": r.matched,
            "next_cursor": next.map(|c| c.to_string()),
        });
        if explain_wanted(&p) {
            v["explain"] = serde_json::to_value(&r.explain).unwrap_or(Value::Null);
        }
        Ok(v)
    })
    .await
}

async fn histogram_handler(
    State(st): State<AppState>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    let (tenant, p) = match prepare(&st, &method, &headers, query, &body).await {
        Ok(x) => x,
        Err(e) => return e.into_response(),
    };
    let store = st.store().clone();
    let t = tenant.clone();
    run(&st, &t, move |deadline| {
        let mut filter = filter_from(&p, store.now()).map_err(bad)?;
        filter.deadline = deadline.clone();
        let span = filter.time.end.0 - filter.time.start.0;
        let step_ns = match param(&p, "step") {
            Some(s) => DurationDialect::LokiStep.parse(s).map_err(bad)?.0,
            // About 100 buckets, whole seconds.
            None => ((span / 100).max(1_000_000_000) + 999_999_999) / 1_000_000_000 * 1_000_000_000,
        };
        let group = match param(&p, "group_by") {
            None => HistogramGroup::None,
            Some("severity" | "level") => HistogramGroup::Severity,
            Some(k) => HistogramGroup::Label(k.to_owned()),
        };
        let h = histogram(&store, &tenant, &HistogramRequest { filter, step_ns, group }).map_err(query_err)?;
        let mut v = json!({
            "step_ns": step_ns.to_string(),
            "buckets": h.buckets.iter().map(|b| b.to_string()).collect::<Vec<_>>(),
            "series": h.series.iter().map(|s| json!({"group": s.group, "counts": s.counts, "total": s.counts.iter().sum::<u64>()})).collect::<Vec<_>>(),
        });
        if explain_wanted(&p) {
            v["explain"] = serde_json::to_value(&h.explain).unwrap_or(Value::Null);
        }
        Ok(v)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters() {
        let m = parse_filter(r#"service.name="api""#).ok();
        assert!(
            m.as_ref().is_some_and(|m| m.key == "service.name"
                && m.value == "api"
                && m.op == MatchOp::Eq)
        );
        let m = parse_filter("user.id!~a|b").ok();
        assert!(
            m.as_ref()
                .is_some_and(|m| m.op == MatchOp::NotRegex && m.value == "a|b")
        );
        assert!(parse_filter("novalue").is_err());
        assert!(parse_filter("=x").is_err());
        assert_eq!(severity_number("warn").ok(), Some(13));
        assert!(severity_number("99").is_err());
    }
}
