//! Request parameters of the Prometheus HTTP API, parsed as Prometheus parses them: GET query
//! strings and `application/x-www-form-urlencoded` POST bodies (body values first, as Go's
//! `Request.Form` orders them), times and durations in milliseconds as Prometheus reads them
//! (`sightline_query::time`'s Prometheus dialects), and `match[]` series selectors turned into
//! storage matchers.

use promql_parser::parser::Expr;
use sightline_query::time;
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
        time::prometheus_time(raw)
            .map(|t| t.0)
            .map_err(|e| ApiError::bad_data(format!("invalid parameter \"{key}\": {e}")))
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
                time::prometheus_duration(raw)
                    .map(|d| d.0)
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
