//! Series metadata endpoints: `/api/v1/series`, `/api/v1/labels`,
//! `/api/v1/label/{name}/values`, `/api/v1/metadata`, and the status endpoints Grafana reads
//! (`/api/v1/status/buildinfo`, `/api/v1/status/runtimeinfo`; `/api/v1/rules` and
//! `/api/v1/alerts` answer empty lists: Sightline evaluates no rules).
//!
//! The series catalog has no time index, so with `start`/`end` given the series are narrowed
//! to those with at least one sample in `[start, end]` by a scan of the `series_id` column
//! (pruned by postings and time); without them every known series counts, as Prometheus does
//! for its whole time range.
//!
//! `/api/v1/metadata` reports, per metric family: the metadata remote-write clients sent
//! (newest wins); else the type, help and unit stored with OTLP series (histogram and summary
//! series folded into their family by dropping `_bucket`/`_sum`/`_count`, UCUM units turned
//! into Prometheus unit words: `s` -> `seconds`); else, for series of unknown type, a guess
//! from the name: `_bucket` with `le` (or `_sum`/`_count` next to a `_bucket`) is a histogram,
//! a `quantile` label (or `_sum`/`_count` next to it) a summary, `_total` a counter; anything
//! else is `unknown`.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use arrow_array::{Array, UInt64Array};
use axum::Extension;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use sightline_storage::schema::col;
use sightline_storage::{
    Deadline, Matcher, MetricKind, Predicate, ScanRequest, SeriesDef, Signal, Store, TenantId,
    TimeRange, UnixNanos,
};

use super::params::Params;
use super::query::{json_str, push_labels, query_timeout};
use super::{ApiError, FamilyMeta, PromState, request_params, success, tenant};
use crate::http::AppState;
use crate::otlp::metrics::unit_suffix;

/// The Prometheus version whose API this one follows (reported by `buildinfo`).
pub const PROMETHEUS_API_VERSION: &str = "2.45.0";

/// The warning Prometheus adds when `limit` cut a result.
const TRUNCATED: &str = "results truncated due to limit";

/// The time range of a metadata request: `None` when neither `start` nor `end` was given.
fn time_range(p: &Params) -> Result<Option<(i64, i64)>, ApiError> {
    if p.get("start").is_none() && p.get("end").is_none() {
        return Ok(None);
    }
    let start = p.time_or("start", i64::MIN)?;
    let end = p.time_or("end", i64::MAX)?;
    if end < start {
        return Err(ApiError::bad_data(
            "end timestamp must not be before start time",
        ));
    }
    Ok(Some((start, end)))
}

/// Ids of the series matching `matchers` with a sample in `[start, end]`.
fn ids_with_samples(
    store: &Store,
    tenant: &TenantId,
    matchers: &[Matcher],
    (start, end): (i64, i64),
    deadline: &Deadline,
) -> Result<HashSet<u64>, ApiError> {
    let start = UnixNanos::from_millis(start.max(0));
    let end = UnixNanos::from_millis(end.saturating_add(1).clamp(0, i64::MAX / 1_000_000));
    let mut ids = HashSet::new();
    if end <= start {
        return Ok(ids);
    }
    let range = TimeRange::new(start, end).map_err(|e| ApiError::bad_data(e.to_string()))?;
    let mut req = ScanRequest::new(tenant.clone(), Signal::Samples, range);
    req.predicates = matchers.iter().cloned().map(Predicate::Attr).collect();
    req.projection = Some(vec![col::SERIES_ID.to_owned()]);
    req.deadline = deadline.clone();
    let res = store.scan(&req)?;
    for b in &res.batches {
        let Some(col) = b
            .column_by_name(col::SERIES_ID)
            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
        else {
            return Err(ApiError::internal("sample batch without series_id"));
        };
        ids.extend(col.values().iter().copied());
    }
    Ok(ids)
}

/// The series matching any of `selectors` (all series when there are none), narrowed to the
/// time range when given, sorted by label set.
fn select_series(
    store: &Store,
    tenant: &TenantId,
    selectors: &[Vec<Matcher>],
    range: Option<(i64, i64)>,
    deadline: &Deadline,
) -> Result<Vec<Arc<SeriesDef>>, ApiError> {
    let all = [Vec::new()];
    let selectors = if selectors.is_empty() {
        &all[..]
    } else {
        selectors
    };
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for m in selectors {
        deadline.check()?;
        let defs = store.series(tenant, m);
        let live = match range {
            Some(r) if !defs.is_empty() => Some(ids_with_samples(store, tenant, m, r, deadline)?),
            _ => None,
        };
        for d in defs {
            if live.as_ref().is_none_or(|l| l.contains(&d.id.0)) && seen.insert(d.id) {
                out.push(d);
            }
        }
    }
    out.sort_by(|a, b| (&a.metric_name, &a.labels).cmp(&(&b.metric_name, &b.labels)));
    Ok(out)
}

fn series_labels(d: &SeriesDef) -> Vec<(String, String)> {
    let mut v = Vec::with_capacity(d.labels.len() + 1);
    v.push(("__name__".to_owned(), d.metric_name.clone()));
    v.extend(d.labels.iter().cloned());
    v.sort();
    v
}

fn string_list(items: &[String]) -> String {
    let mut out = String::from("[");
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&json_str(s));
    }
    out.push(']');
    out
}

/// What every metadata handler starts with: tenant, parameters, deadline.
fn prologue(
    st: &AppState,
    method: &Method,
    headers: &HeaderMap,
    q: Option<&str>,
    body: &Bytes,
) -> Result<(TenantId, Params, std::time::Duration), ApiError> {
    let tenant = tenant(st, headers)?;
    let p = request_params(method, headers, q, body);
    let timeout = query_timeout(st, &p)?;
    Ok((tenant, p, timeout))
}

fn respond(r: Result<(String, Vec<String>), ApiError>) -> Response {
    match r {
        Ok((data, warnings)) => success(&data, &warnings),
        Err(e) => e.into_response(),
    }
}

/// `GET|POST /api/v1/series`: `match[]` (required, repeated), `start`, `end`, `limit`.
pub async fn series(
    State(st): State<AppState>,
    method: Method,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let run = async {
        let (tenant, p, timeout) = prologue(&st, &method, &headers, q.as_deref(), &body)?;
        if p.all("match[]").is_empty() {
            return Err(ApiError::bad_data("no match[] parameter provided"));
        }
        let range = time_range(&p)?;
        let limit = p.limit("limit")?;
        let store = Arc::clone(st.store());
        let t = tenant.clone();
        let defs = st
            .runner
            .run(&tenant, timeout, move |deadline| {
                let selectors = p.matchers()?;
                select_series(&store, &t, &selectors, range, deadline)
            })
            .await?;
        let mut warnings = Vec::new();
        let mut out = String::from("[");
        for (i, d) in defs.iter().enumerate() {
            if limit.is_some_and(|l| i >= l) {
                warnings.push(TRUNCATED.to_owned());
                break;
            }
            if i > 0 {
                out.push(',');
            }
            push_labels(&mut out, &series_labels(d));
        }
        out.push(']');
        Ok((out, warnings))
    };
    respond(run.await)
}

fn limited(mut v: Vec<String>, limit: Option<usize>) -> (String, Vec<String>) {
    let mut warnings = Vec::new();
    if let Some(l) = limit
        && v.len() > l
    {
        v.truncate(l);
        warnings.push(TRUNCATED.to_owned());
    }
    (string_list(&v), warnings)
}

/// `GET|POST /api/v1/labels`: `match[]` (optional, repeated), `start`, `end`, `limit`.
pub async fn labels(
    State(st): State<AppState>,
    method: Method,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let run = async {
        let (tenant, p, timeout) = prologue(&st, &method, &headers, q.as_deref(), &body)?;
        let range = time_range(&p)?;
        let limit = p.limit("limit")?;
        let store = Arc::clone(st.store());
        let t = tenant.clone();
        let names = st
            .runner
            .run(&tenant, timeout, move |deadline| {
                let selectors = p.matchers()?;
                if selectors.is_empty() && range.is_none() {
                    return Ok(store.label_names(&t));
                }
                let defs = select_series(&store, &t, &selectors, range, deadline)?;
                let mut names: HashSet<&str> = HashSet::new();
                for d in &defs {
                    names.insert("__name__");
                    names.extend(d.labels.iter().map(|(k, _)| k.as_str()));
                }
                let mut v: Vec<String> = names.into_iter().map(str::to_owned).collect();
                v.sort();
                Ok(v)
            })
            .await?;
        Ok(limited(names, limit))
    };
    respond(run.await)
}

/// Whether `name` is a valid Prometheus label name.
pub fn valid_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `GET /api/v1/label/{name}/values`: `match[]` (optional, repeated), `start`, `end`, `limit`.
pub async fn label_values(
    State(st): State<AppState>,
    Path(name): Path<String>,
    method: Method,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let run = async {
        let (tenant, p, timeout) = prologue(&st, &method, &headers, q.as_deref(), &Bytes::new())?;
        if !valid_label_name(&name) {
            return Err(ApiError::bad_data(format!("invalid label name: {name:?}")));
        }
        let range = time_range(&p)?;
        let limit = p.limit("limit")?;
        let store = Arc::clone(st.store());
        let t = tenant.clone();
        let values = st
            .runner
            .run(&tenant, timeout, move |deadline| {
                let selectors = p.matchers()?;
                if selectors.is_empty() && range.is_none() {
                    return Ok(store.label_values(&t, &name));
                }
                let defs = select_series(&store, &t, &selectors, range, deadline)?;
                let set: HashSet<&str> = defs
                    .iter()
                    .map(|d| d.label(&name))
                    .filter(|v| !v.is_empty())
                    .collect();
                let mut v: Vec<String> = set.into_iter().map(str::to_owned).collect();
                v.sort();
                Ok(v)
            })
            .await?;
        Ok(limited(values, limit))
    };
    respond(run.await)
}

/// The family name and metadata of one stored series (see the module docs).
pub fn family_of(d: &SeriesDef, names: &HashSet<&str>) -> (String, FamilyMeta) {
    let name = d.metric_name.as_str();
    let strip = |sfx: &[&str]| -> Option<&str> { sfx.iter().find_map(|s| name.strip_suffix(s)) };
    let has_label = |k: &str| !d.label(k).is_empty();
    let (family, kind) = match d.kind {
        MetricKind::Histogram => (
            strip(&["_bucket", "_sum", "_count"]).unwrap_or(name),
            "histogram",
        ),
        MetricKind::Summary => (strip(&["_sum", "_count"]).unwrap_or(name), "summary"),
        MetricKind::Counter => (name, "counter"),
        MetricKind::Gauge => (name, "gauge"),
        MetricKind::Unknown => {
            if let Some(base) = name.strip_suffix("_bucket").filter(|_| has_label("le")) {
                (base, "histogram")
            } else if let Some(base) = strip(&["_sum", "_count"]) {
                if names.contains(format!("{base}_bucket").as_str()) {
                    (base, "histogram")
                } else if names.contains(base) {
                    (base, "summary")
                } else {
                    (name, "unknown")
                }
            } else if has_label("quantile") {
                (name, "summary")
            } else if name.ends_with("_total") {
                (name, "counter")
            } else {
                (name, "unknown")
            }
        }
    };
    let unit = if d.unit.is_empty() {
        String::new()
    } else {
        unit_suffix(&d.unit, d.kind == MetricKind::Gauge)
    };
    (
        family.to_owned(),
        FamilyMeta {
            kind: kind.to_owned(),
            help: d.help.clone(),
            unit,
        },
    )
}

/// `GET /api/v1/metadata`: `metric`, `limit`, `limit_per_metric`.
pub async fn metadata(
    State(st): State<AppState>,
    Extension(ps): Extension<Arc<PromState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let run = async {
        let (tenant, p, timeout) = prologue(&st, &method, &headers, q.as_deref(), &Bytes::new())?;
        let metric = p.get("metric").map(str::to_owned);
        let limit = p.limit("limit")?;
        let per_metric = p.limit("limit_per_metric")?;
        let store = Arc::clone(st.store());
        let ps2 = Arc::clone(&ps);
        let t = tenant.clone();
        let families = st
            .runner
            .run(&tenant, timeout, move |deadline| {
                let tenant = t;
                let defs = store.series(&tenant, &[]);
                deadline.check()?;
                let names: HashSet<&str> = defs.iter().map(|d| d.metric_name.as_str()).collect();
                let mut fams: BTreeMap<String, Vec<FamilyMeta>> = BTreeMap::new();
                for d in &defs {
                    let (family, m) = family_of(d, &names);
                    let e = fams.entry(family).or_default();
                    if !e.contains(&m) {
                        e.push(m);
                    }
                }
                for (family, m) in ps2.all_metadata(&tenant) {
                    fams.insert(family, vec![m]);
                }
                Ok(fams)
            })
            .await?;
        let mut out = String::from("{");
        let mut n = 0usize;
        for (family, metas) in &families {
            if metric.as_deref().is_some_and(|m| m != family) {
                continue;
            }
            if limit.is_some_and(|l| n >= l) {
                break;
            }
            if n > 0 {
                out.push(',');
            }
            n += 1;
            out.push_str(&json_str(family));
            out.push_str(":[");
            let take = per_metric.unwrap_or(usize::MAX);
            for (i, m) in metas.iter().take(take).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(
                    &serde_json::json!({"type": m.kind, "help": m.help, "unit": m.unit})
                        .to_string(),
                );
            }
            out.push(']');
        }
        out.push('}');
        Ok((out, Vec::new()))
    };
    respond(run.await)
}

/// `GET /api/v1/status/buildinfo`: Prometheus' shape, no `features` (so Grafana treats the
/// server as plain Prometheus, not Mimir with a ruler).
pub async fn buildinfo(State(st): State<AppState>, headers: HeaderMap) -> Response {
    if let Err(e) = tenant(&st, &headers) {
        return e.into_response();
    }
    let data = serde_json::json!({
        "version": PROMETHEUS_API_VERSION,
        "revision": concat!("sightline-", env!("CARGO_PKG_VERSION")),
        "branch": "",
        "buildUser": "sightline",
        "buildDate": "",
        "goVersion": "",
    });
    success(&data.to_string(), &[])
}

/// `GET /api/v1/status/runtimeinfo`: Prometheus' fields, filled with what applies.
pub async fn runtimeinfo(State(st): State<AppState>, headers: HeaderMap) -> Response {
    if let Err(e) = tenant(&st, &headers) {
        return e.into_response();
    }
    let retention = st
        .store()
        .config()
        .retention
        .default_ttl
        .map(|d| format!("{}d", d.as_secs() / 86_400))
        .unwrap_or_else(|| "unlimited".to_owned());
    let data = serde_json::json!({
        "startTime": "",
        "CWD": "",
        "reloadConfigSuccess": true,
        "lastConfigTime": "",
        "corruptionCount": st.store().stats().quarantined_segments,
        "goroutineCount": 0,
        "GOMAXPROCS": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "GOGC": "",
        "GODEBUG": "",
        "storageRetention": retention,
    });
    success(&data.to_string(), &[])
}

/// `GET /api/v1/rules`: no rule groups.
pub async fn rules(State(st): State<AppState>, headers: HeaderMap) -> Response {
    match tenant(&st, &headers) {
        Ok(_) => success(r#"{"groups":[]}"#, &[]),
        Err(e) => e.into_response(),
    }
}

/// `GET /api/v1/alerts`: no alerts.
pub async fn alerts(State(st): State<AppState>, headers: HeaderMap) -> Response {
    match tenant(&st, &headers) {
        Ok(_) => success(r#"{"alerts":[]}"#, &[]),
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str, kind: MetricKind, labels: &[(&str, &str)]) -> SeriesDef {
        SeriesDef::new(
            name,
            kind,
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn families() {
        let names: HashSet<&str> = [
            "rpc_seconds_bucket",
            "rpc_seconds_sum",
            "rpc_seconds_count",
            "lat",
            "lat_sum",
            "other_count",
        ]
        .into_iter()
        .collect();
        let f = |d: SeriesDef| {
            let (n, m) = family_of(&d, &names);
            (n, m.kind)
        };
        use MetricKind::*;
        assert_eq!(
            f(def("rpc_seconds_bucket", Unknown, &[("le", "1")])),
            ("rpc_seconds".into(), "histogram".into())
        );
        assert_eq!(
            f(def("rpc_seconds_count", Unknown, &[])),
            ("rpc_seconds".into(), "histogram".into())
        );
        assert_eq!(
            f(def("lat_sum", Unknown, &[])),
            ("lat".into(), "summary".into())
        );
        assert_eq!(
            f(def("lat", Unknown, &[("quantile", "0.5")])),
            ("lat".into(), "summary".into())
        );
        assert_eq!(
            f(def("other_count", Unknown, &[])),
            ("other_count".into(), "unknown".into())
        );
        assert_eq!(
            f(def("reqs_total", Unknown, &[])),
            ("reqs_total".into(), "counter".into())
        );
        assert_eq!(
            f(def("x_bucket", Histogram, &[("le", "1")])),
            ("x".into(), "histogram".into())
        );
        assert_eq!(f(def("temp", Gauge, &[])), ("temp".into(), "gauge".into()));
        let mut d = def("dur_seconds_sum", Summary, &[]);
        d.unit = "s".into();
        assert_eq!(family_of(&d, &names).1.unit, "seconds");
    }

    #[test]
    fn label_names() {
        assert!(valid_label_name("job"));
        assert!(valid_label_name("__name__"));
        assert!(!valid_label_name("1a"));
        assert!(!valid_label_name("a-b"));
        assert!(!valid_label_name(""));
    }
}
