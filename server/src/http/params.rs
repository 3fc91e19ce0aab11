//! Request parameters shared by the log APIs (native and Loki): form/query-string pairs,
//! timestamps and durations in the forms Loki accepts.

use axum::http::{HeaderMap, Method};

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

/// Now, in Unix nanoseconds.
pub(crate) fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A timestamp as Loki accepts it: an integer (nanoseconds; 10 digits or fewer are seconds), a
/// float (seconds), or RFC3339.
pub(crate) fn parse_time(s: &str) -> Result<i64, String> {
    let s = s.trim();
    let bad = || format!("invalid timestamp {s:?}: use Unix nanoseconds, seconds or RFC3339");
    if let Ok(n) = s.parse::<i64>() {
        let digits = s.trim_start_matches('-').len();
        return if digits <= 10 {
            n.checked_mul(1_000_000_000).ok_or_else(bad)
        } else {
            Ok(n)
        };
    }
    if let Ok(f) = s.parse::<f64>() {
        let ns = f * 1e9;
        return if ns.is_finite() && ns.abs() < 9.2e18 {
            Ok(ns.round() as i64)
        } else {
            Err(bad())
        };
    }
    // RFC 3339 (any offset), through the same parser as the other query APIs.
    sightline_query::time::parse_time(s)
        .map(|t| t.0)
        .map_err(|_| bad())
}

/// A step or window: a duration (`30s`, `1m`) or a number of seconds (`15`, `0.5`).
pub(crate) fn parse_step(s: &str) -> Result<i64, String> {
    let s = s.trim();
    if let Ok(f) = s.parse::<f64>() {
        let ns = f * 1e9;
        if ns.is_finite() && (1.0..9.2e18).contains(&ns) {
            return Ok(ns.round() as i64);
        }
        return Err(format!("invalid step {s:?}: must be positive"));
    }
    sightline_query::logs::logql::parse_duration(s).map_err(|e| e.to_string())
}

/// The `[start, end]` of a request: `start`/`end` (or `since` as a duration before `end`),
/// defaulting to the last `default_span_ns`.
pub(crate) fn time_range(
    p: &[(String, String)],
    default_span_ns: i64,
) -> Result<(i64, i64), String> {
    let end = match get(p, "end") {
        Some(e) => parse_time(e)?,
        None => now_ns(),
    };
    let start = match (get(p, "start"), get(p, "since")) {
        (Some(s), _) => parse_time(s)?,
        (None, Some(since)) => end.saturating_sub(parse_step(since)?),
        (None, None) => end.saturating_sub(default_span_ns),
    };
    if end < start {
        return Err("end timestamp must not be before start time".into());
    }
    Ok((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(parse_time("1700000000"), Ok(1_700_000_000_000_000_000));
        assert_eq!(
            parse_time("1700000000000000001"),
            Ok(1_700_000_000_000_000_001)
        );
        assert_eq!(parse_time("1700000000.5"), Ok(1_700_000_000_500_000_000));
        assert_eq!(
            parse_time("2023-11-14T22:13:20Z"),
            Ok(1_700_000_000_000_000_000)
        );
        assert_eq!(
            parse_time("2023-11-14T23:13:20.25+01:00"),
            Ok(1_700_000_000_250_000_000)
        );
        assert!(parse_time("yesterday").is_err());
        assert_eq!(parse_step("1m"), Ok(60_000_000_000));
        assert_eq!(parse_step("15"), Ok(15_000_000_000));
        assert!(parse_step("0").is_err());
    }
}
