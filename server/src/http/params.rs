//! Request parameters shared by the log APIs (native and Loki): form/query-string pairs,
//! timestamps and durations in the forms Loki accepts (`sightline_query::time`'s Loki
//! dialects).

use axum::http::{HeaderMap, Method};
use sightline_query::time::{DurationDialect, TimeDialect, TimeError};
use sightline_storage::UnixNanos;

/// Parameters of a request: the query string's pairs, then (for POST) the form body's pairs or
/// a JSON object's fields (arrays become repeated pairs, non-string scalars their JSON text).
pub(crate) fn collect(
    method: &Method,
    headers: &HeaderMap,
    query: Option<&str>,
    body: &[u8],
) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = query
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    if *method != Method::POST || body.is_empty() {
        return Ok(out);
    }
    let ct = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if ct.starts_with("application/json") {
        let v: serde_json::Value =
            serde_json::from_slice(body).map_err(|e| format!("invalid JSON body: {e}"))?;
        let serde_json::Value::Object(map) = v else {
            return Err("JSON body must be an object".into());
        };
        for (k, v) in map {
            match v {
                serde_json::Value::Array(items) => {
                    for it in items {
                        out.push((k.clone(), scalar(it)));
                    }
                }
                serde_json::Value::Null => {}
                other => out.push((k, scalar(other))),
            }
        }
    } else {
        out.extend(form_urlencoded::parse(body).into_owned());
    }
    Ok(out)
}

fn scalar(v: serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    }
}

/// The last value of `name`.
pub(crate) fn get<'a>(p: &'a [(String, String)], name: &str) -> Option<&'a str> {
    p.iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// Every value of `name`.
pub(crate) fn all<'a>(p: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    p.iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .collect()
}

/// The `[start, end]` of a request: `start`/`end` (or `since` as a duration before `end`),
/// defaulting to the `default_span_ns` before `now`.
pub(crate) fn time_range(
    p: &[(String, String)],
    default_span_ns: i64,
    now: UnixNanos,
) -> Result<(i64, i64), RangeError> {
    let end = match get(p, "end") {
        Some(e) => TimeDialect::Loki.parse(e)?.0,
        None => now.0,
    };
    let start = match (get(p, "start"), get(p, "since")) {
        (Some(s), _) => TimeDialect::Loki.parse(s)?.0,
        (None, Some(since)) => end.saturating_sub(DurationDialect::LokiStep.parse(since)?.0),
        (None, None) => end.saturating_sub(default_span_ns),
    };
    if end < start {
        return Err(RangeError::EndBeforeStart);
    }
    Ok((start, end))
}

/// A `start`/`end`/`since` the request got wrong.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RangeError {
    /// A time or duration its dialect refuses.
    #[error(transparent)]
    Time(#[from] TimeError),
    /// `end` before `start`.
    #[error("end timestamp must not be before start time")]
    EndBeforeStart,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        let p = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let range = |pairs: &[(&str, &str)]| {
            time_range(&p(pairs), 1, UnixNanos(1_700_000_120_000_000_000))
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            range(&[("start", "1700000000"), ("end", "1700000060")]),
            Ok((1_700_000_000_000_000_000, 1_700_000_060_000_000_000))
        );
        assert_eq!(
            range(&[("since", "1m"), ("end", "1700000060")]),
            Ok((1_700_000_000_000_000_000, 1_700_000_060_000_000_000))
        );
        assert_eq!(
            range(&[("since", "1m")]),
            Ok((1_700_000_060_000_000_000, 1_700_000_120_000_000_000))
        );
        assert_eq!(
            range(&[("end", "yesterday")]),
            Err("invalid timestamp \"yesterday\": use Unix nanoseconds, seconds or RFC3339".into())
        );
        assert_eq!(
            range(&[("since", "0")]),
            Err("invalid step \"0\": must be positive".into())
        );
        assert_eq!(
            time_range(&p(&[("start", "2"), ("end", "1")]), 1, UnixNanos(0)),
            Err(RangeError::EndBeforeStart)
        );
    }
}
