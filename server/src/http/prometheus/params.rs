//! Request parameters of the Prometheus HTTP API, parsed as Prometheus parses them: GET query
//! strings and `application/x-www-form-urlencoded` POST bodies (body values first, as Go's
//! `Request.Form` orders them), times as unix seconds with fractions or RFC 3339, durations as
//! float seconds or Prometheus durations (`15s`, `1m30s`, `1d`), and `match[]` series
//! selectors turned into storage matchers.

use promql_parser::parser::Expr;
use sightline_storage::Matcher;

use super::ApiError;

/// Most `match[]` selectors in one metadata request (each one is a catalog lookup and, with a
/// time range, a scan).
pub const MAX_SELECTORS: usize = 64;

/// Every `key=value` pair of a request, body pairs before query-string pairs.
#[derive(Debug, Default, Clone)]
pub struct Params {
    pairs: Vec<(String, String)>,
}

impl Params {
    /// Parses a query string and an optional form body.
    pub fn parse(query: Option<&str>, form_body: Option<&[u8]>) -> Self {
        let mut pairs: Vec<(String, String)> = Vec::new();
        if let Some(body) = form_body {
            pairs.extend(form_urlencoded::parse(body).into_owned());
        }
        if let Some(q) = query {
            pairs.extend(form_urlencoded::parse(q.as_bytes()).into_owned());
        }
        Self { pairs }
    }

    /// The first value of `key`, if given and not empty (Go's `FormValue`).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    /// Every value of `key`, in order.
    pub fn all(&self, key: &str) -> Vec<&str> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// A required time parameter.
    pub fn time(&self, key: &str) -> Result<i64, ApiError> {
        let raw = self.get(key).unwrap_or("");
        parse_time(raw).map_err(|e| ApiError::bad_data(format!("invalid parameter \"{key}\": {e}")))
    }

    /// An optional time parameter with a default.
    pub fn time_or(&self, key: &str, default_ms: i64) -> Result<i64, ApiError> {
        match self.get(key) {
            None => Ok(default_ms),
            Some(_) => self.time(key),
        }
    }

    /// An optional duration parameter, in milliseconds.
    pub fn duration(&self, key: &str) -> Result<Option<i64>, ApiError> {
        self.get(key)
            .map(|raw| {
                parse_duration(raw)
                    .map_err(|e| ApiError::bad_data(format!("invalid parameter \"{key}\": {e}")))
            })
            .transpose()
    }

    /// The `limit` parameter (0 or absent: no limit).
    pub fn limit(&self, key: &str) -> Result<Option<usize>, ApiError> {
        match self.get(key) {
            None => Ok(None),
            Some(raw) => match raw.parse::<i64>() {
                Ok(n) if n > 0 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
                Ok(0) => Ok(None),
                Ok(_) => Err(ApiError::bad_data(format!(
                    "invalid parameter \"{key}\": limit must be non-negative"
                ))),
                Err(_) => Err(ApiError::bad_data(format!(
                    "invalid parameter \"{key}\": cannot parse \"{raw}\" to a valid limit"
                ))),
            },
        }
    }

    /// The `match[]` selectors, each parsed into storage matchers (at most
    /// [`MAX_SELECTORS`]).
    pub fn matchers(&self) -> Result<Vec<Vec<Matcher>>, ApiError> {
        let raw = self.all("match[]");
        if raw.len() > MAX_SELECTORS {
            return Err(ApiError::bad_data(format!(
                "{} match[] selectors; the limit is {MAX_SELECTORS}",
                raw.len()
            )));
        }
        raw.into_iter().map(parse_selector).collect()
    }
}

/// Milliseconds since the epoch of a Prometheus API time: unix seconds (fractions rounded to
/// the millisecond) or RFC 3339.
pub fn parse_time(raw: &str) -> Result<i64, String> {
    let invalid = || format!("cannot parse \"{raw}\" to a valid timestamp");
    if let Ok(secs) = raw.parse::<f64>() {
        if !secs.is_finite() {
            return Err(invalid());
        }
        let ms = (secs * 1000.0).round();
        // Within Prometheus' own min/max time (about +-292 million years in ms is far wider;
        // we bound to what an i64 of milliseconds holds).
        if ms.abs() >= 9.2e18 {
            return Err(invalid());
        }
        return Ok(ms as i64);
    }
    chrono::DateTime::parse_from_rfc3339(raw)
        .map(|t| t.timestamp_millis())
        .map_err(|_| invalid())
}

/// Milliseconds of a Prometheus API duration: float seconds or a Prometheus duration string
/// (`1y2w3d4h5m6s7ms`, units in that order, each at most once).
pub fn parse_duration(raw: &str) -> Result<i64, String> {
    if let Ok(secs) = raw.parse::<f64>() {
        let ms = secs * 1000.0;
        if !ms.is_finite() || ms.abs() >= 9.2e15 {
            return Err(format!(
                "cannot parse \"{raw}\" to a valid duration. It overflows int64"
            ));
        }
        return Ok(ms.round() as i64);
    }
    parse_prom_duration(raw).ok_or_else(|| format!("cannot parse \"{raw}\" to a valid duration"))
}

fn parse_prom_duration(s: &str) -> Option<i64> {
    const UNITS: [(&str, i64); 7] = [
        ("y", 365 * 86_400_000),
        ("w", 7 * 86_400_000),
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1000),
        ("ms", 1),
    ];
    if s.is_empty() {
        return None;
    }
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut total: i64 = 0;
    let mut last_unit: Option<usize> = None;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        let n: i64 = s.get(start..i)?.parse().ok()?;
        let ustart = i;
        while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
            i += 1;
        }
        let unit = s.get(ustart..i)?;
        let idx = UNITS.iter().position(|(u, _)| *u == unit)?;
        if last_unit.is_some_and(|l| idx <= l) {
            return None;
        }
        last_unit = Some(idx);
        total = total.checked_add(n.checked_mul(UNITS[idx].1)?)?;
    }
    Some(total)
}

/// Parses a series selector (`up`, `{job="x"}`, `up{instance=~"a.*"}`) into matchers.
pub fn parse_selector(raw: &str) -> Result<Vec<Matcher>, ApiError> {
    let bad = |e: String| ApiError::bad_data(format!("invalid parameter \"match[]\": {e}"));
    let expr = sightline_query::promql::parse(raw).map_err(|e| bad(e.to_string()))?;
    let Expr::VectorSelector(vs) = expr else {
        return Err(bad(format!("{raw:?} is not a series selector")));
    };
    if vs.offset.is_some() || vs.at.is_some() {
        return Err(bad(
            "offset and @ are not allowed in a series selector".into()
        ));
    }
    let matchers =
        sightline_query::promql::source::convert_matchers(vs.name.as_deref(), &vs.matchers)
            .map_err(|e| bad(e.to_string()))?;
    if matchers.iter().all(Matcher::matches_missing) {
        return Err(bad(
            "match[] must contain at least one non-empty matcher".to_owned()
        ));
    }
    Ok(matchers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(parse_time("4"), Ok(4000));
        assert_eq!(parse_time("1435781451.781"), Ok(1_435_781_451_781));
        assert_eq!(parse_time("1.0005"), Ok(1001));
        assert_eq!(parse_time("-1.5"), Ok(-1500));
        assert_eq!(
            parse_time("2015-07-01T20:10:51.781Z"),
            Ok(1_435_781_451_781)
        );
        assert_eq!(
            parse_time("2015-07-01T22:10:51+02:00"),
            Ok(1_435_781_451_000)
        );
        assert!(parse_time("").is_err());
        assert!(parse_time("yesterday").is_err());
        assert!(parse_time("NaN").is_err());
        assert!(parse_time("Inf").is_err());
        assert!(parse_time("1e300").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("15"), Ok(15_000));
        assert_eq!(parse_duration("0.5"), Ok(500));
        assert_eq!(parse_duration("15s"), Ok(15_000));
        assert_eq!(parse_duration("1m30s"), Ok(90_000));
        assert_eq!(parse_duration("1h"), Ok(3_600_000));
        assert_eq!(parse_duration("2d"), Ok(172_800_000));
        assert_eq!(parse_duration("1w"), Ok(604_800_000));
        assert_eq!(parse_duration("100ms"), Ok(100));
        assert_eq!(parse_duration("1s500ms"), Ok(1500));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("1x").is_err());
        assert!(parse_duration("30s1m").is_err());
        assert!(parse_duration("1m1m").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("1e300").is_err());
    }

    #[test]
    fn form_then_query() {
        let p = Params::parse(
            Some("query=up&match[]=a&time=1"),
            Some(b"query=1%2B1&time=4&match%5B%5D=b"),
        );
        assert_eq!(p.get("query"), Some("1+1"));
        assert_eq!(p.time("time").ok(), Some(4000));
        assert_eq!(p.all("match[]"), vec!["b", "a"]);
        assert!(p.get("missing").is_none());
    }

    #[test]
    fn selectors() {
        let m = parse_selector(r#"up{job="x",instance=~"a.*"}"#).unwrap_or_default();
        assert_eq!(m.len(), 3);
        assert!(m.iter().any(|m| m.key == "__name__" && m.value == "up"));
        assert!(parse_selector("rate(up[5m])").is_err());
        assert!(parse_selector(r#"{job=""}"#).is_err());
        assert!(parse_selector("up{").is_err());
    }
}
