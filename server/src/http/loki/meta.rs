//! Loki metadata endpoints: label names and values, series, index statistics and volume,
//! detected labels and fields, patterns (always empty) and build info.
//!
//! They all read the lines of the range whose stream labels match the optional selector
//! (`query` or `match[]`), by default the last 6 hours (Loki's default for label queries).

use std::collections::{BTreeMap, BTreeSet};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use sightline_query::logs::Labels;
use sightline_query::logs::logql::eval::{SelectedLine, select_lines, selector_matches};
use sightline_query::logs::logql::parse_selector;
use sightline_query::time::DurationDialect;
use sightline_storage::{Deadline, Matcher, ScanStats, Store, TenantId, TimeRange, UnixNanos};

use super::{LokiError, bad, fmt_value, prepare, query_err, run, ts_seconds};
use crate::http::AppState;
use crate::http::params::{self, get as param};

/// Most selectors (`match[]` and `query` together) in one metadata request.
pub const MAX_SELECTORS: usize = 64;

/// Default range of metadata queries: six hours before `end`.
const DEFAULT_SPAN_NS: i64 = 6 * 3_600 * 1_000_000_000;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/loki/api/v1/labels", get(labels).post(labels))
        .route(
            "/loki/api/v1/label/{name}/values",
            get(label_values).post(label_values),
        )
        .route("/loki/api/v1/series", get(series).post(series))
        .route(
            "/loki/api/v1/index/stats",
            get(index_stats).post(index_stats),
        )
        .route("/loki/api/v1/index/volume", get(volume).post(volume))
        .route(
            "/loki/api/v1/index/volume_range",
            get(volume_range).post(volume_range),
        )
        .route("/loki/api/v1/detected_labels", get(detected_labels))
        .route("/loki/api/v1/detected_fields", get(detected_fields))
        .route("/loki/api/v1/patterns", get(patterns))
        .route("/loki/api/v1/status/buildinfo", get(buildinfo))
}

/// What a metadata request covers.
struct Selected {
    lines: Vec<SelectedLine>,
    stats: ScanStats,
    selectors: Vec<Vec<Matcher>>,
    start: i64,
    end: i64,
}

/// The lines a metadata request covers: selectors from `query` and every `match[]` (a line
/// qualifies when any selector matches; no selector = every line).
fn lines(
    store: &Store,
    tenant: &TenantId,
    p: &[(String, String)],
    deadline: &Deadline,
) -> Result<Selected, LokiError> {
    let (start, end) = params::time_range(p, DEFAULT_SPAN_NS, store.now()).map_err(bad)?;
    let time = TimeRange {
        start: UnixNanos(start),
        end: UnixNanos(end.saturating_add(1)),
    };
    let texts: Vec<&str> = params::all(p, "match[]")
        .into_iter()
        .chain(param(p, "query"))
        .collect();
    if texts.len() > MAX_SELECTORS {
        return Err(bad(format!(
            "{} selectors; the limit is {MAX_SELECTORS}",
            texts.len()
        )));
    }
    let selectors = texts
        .into_iter()
        .map(|t| parse_selector(t).map_err(query_err))
        .collect::<Result<Vec<_>, _>>()?;
    // One scan whatever the number of selectors: with one, storage prunes by it; with several,
    // every line of the range is read once and kept when any selector matches its stream.
    let (out, stats) = match selectors.as_slice() {
        [] => select_lines(store, tenant, &[], time, deadline).map_err(query_err)?,
        [one] => select_lines(store, tenant, one, time, deadline).map_err(query_err)?,
        many => {
            let (mut all, stats) =
                select_lines(store, tenant, &[], time, deadline).map_err(query_err)?;
            all.retain(|l| many.iter().any(|s| selector_matches(s, &l.labels.stream)));
            (all, stats)
        }
    };
    let selectors = if selectors.is_empty() {
        vec![Vec::new()]
    } else {
        selectors
    };
    Ok(Selected {
        lines: out,
        stats,
        selectors,
        start,
        end,
    })
}

macro_rules! handler {
    ($name:ident, |$store:ident, $tenant:ident, $p:ident, $deadline:ident| $body:block) => {
        async fn $name(
            State(st): State<AppState>,
            method: Method,
            headers: HeaderMap,
            RawQuery(q): RawQuery,
            body: Bytes,
        ) -> Response {
            let ($tenant, $p) = match prepare(&st, &method, &headers, q.as_deref(), &body) {
                Ok(x) => x,
                Err(e) => return e.into_response(),
            };
            let $store = st.store().clone();
            run(&st, &$tenant.clone(), move |$deadline: &Deadline| $body).await
        }
    };
}

handler!(labels, |store, tenant, p, deadline| {
    let Selected { lines, .. } = lines(&store, &tenant, &p, deadline)?;
    let names: BTreeSet<&String> = lines.iter().flat_map(|l| l.labels.stream.keys()).collect();
    Ok(json!({"status": "success", "data": names}))
});

async fn label_values(
    State(st): State<AppState>,
    Path(name): Path<String>,
    method: Method,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let (tenant, p) = match prepare(&st, &method, &headers, q.as_deref(), &body) {
        Ok(x) => x,
        Err(e) => return e.into_response(),
    };
    let store = st.store().clone();
    run(&st, &tenant.clone(), move |deadline| {
        let Selected { lines, .. } = lines(&store, &tenant, &p, deadline)?;
        let values: BTreeSet<&String> = lines
            .iter()
            .filter_map(|l| l.labels.stream.get(&name))
            .collect();
        Ok(json!({"status": "success", "data": values}))
    })
    .await
}

handler!(series, |store, tenant, p, deadline| {
    if params::all(&p, "match[]").is_empty() && param(&p, "query").is_none() {
        return Err(bad("at least one match[] argument is required"));
    }
    let Selected { lines, .. } = lines(&store, &tenant, &p, deadline)?;
    let sets: BTreeSet<&Labels> = lines.iter().map(|l| &l.labels.stream).collect();
    Ok(json!({"status": "success", "data": sets}))
});

handler!(index_stats, |store, tenant, p, deadline| {
    let Selected { lines, stats, .. } = lines(&store, &tenant, &p, deadline)?;
    let streams: BTreeSet<&Labels> = lines.iter().map(|l| &l.labels.stream).collect();
    // A "chunk" is a segment or unflushed batch that contributed rows.
    Ok(json!({
        "streams": streams.len(),
        "chunks": stats.segments_read + stats.memtable_batches,
        "entries": lines.len(),
        "bytes": lines.iter().map(|l| l.bytes as u64).sum::<u64>(),
    }))
});

/// The labels volumes are grouped by: `targetLabels`, else the selectors' label names, else
/// `service_name`.
fn volume_key(p: &[(String, String)], selectors: &[Vec<Matcher>], stream: &Labels) -> Labels {
    let names: Vec<String> = match param(p, "targetLabels") {
        Some(t) => t
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        None => {
            let mut n: Vec<String> = selectors.iter().flatten().map(|m| m.key.clone()).collect();
            if n.is_empty() {
                n.push("service_name".into());
            }
            n
        }
    };
    if param(p, "aggregateBy") == Some("series") {
        return stream.clone();
    }
    stream
        .iter()
        .filter(|(k, _)| names.contains(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn volume_limit(p: &[(String, String)]) -> Result<usize, LokiError> {
    match param(p, "limit") {
        Some(l) => l.parse().map_err(|_| bad(format!("invalid limit {l:?}"))),
        None => Ok(100),
    }
}

handler!(volume, |store, tenant, p, deadline| {
    let Selected {
        lines,
        selectors,
        end,
        ..
    } = lines(&store, &tenant, &p, deadline)?;
    let mut by: BTreeMap<Labels, u64> = BTreeMap::new();
    for l in &lines {
        *by.entry(volume_key(&p, &selectors, &l.labels.stream))
            .or_default() += l.bytes as u64;
    }
    let mut v: Vec<(Labels, u64)> = by.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(volume_limit(&p)?);
    let result: Vec<Value> = v
        .iter()
        .map(|(m, b)| json!({"metric": m, "value": [ts_seconds(end), fmt_value(*b as f64)]}))
        .collect();
    Ok(json!({"status": "success", "data": {"resultType": "vector", "result": result}}))
});

handler!(volume_range, |store, tenant, p, deadline| {
    let Selected {
        lines,
        selectors,
        start,
        end,
        ..
    } = lines(&store, &tenant, &p, deadline)?;
    let step = match param(&p, "step") {
        Some(s) => DurationDialect::LokiStep.parse(s).map_err(bad)?.0,
        None => ((end - start) / 250 / 1_000_000_000).max(1) * 1_000_000_000,
    };
    if (end - start) / step > sightline_query::logs::MAX_BUCKETS as i64 {
        return Err(bad("too many steps; use a larger step"));
    }
    // Bucket t covers (t - step, t], as a range query with a [step] window would.
    let mut by: BTreeMap<Labels, BTreeMap<i64, u64>> = BTreeMap::new();
    for l in &lines {
        let k = (l.time - start + step - 1).div_euclid(step);
        let t = start + k * step;
        if t > end {
            continue;
        }
        *by.entry(volume_key(&p, &selectors, &l.labels.stream))
            .or_default()
            .entry(t)
            .or_default() += l.bytes as u64;
    }
    let result: Vec<Value> = by
        .iter()
        .take(volume_limit(&p)?)
        .map(|(m, pts)| json!({"metric": m, "values": pts.iter().map(|(t, b)| json!([ts_seconds(*t), fmt_value(*b as f64)])).collect::<Vec<_>>()}))
        .collect();
    Ok(json!({"status": "success", "data": {"resultType": "matrix", "result": result}}))
});

handler!(detected_labels, |store, tenant, p, deadline| {
    let Selected { lines, .. } = lines(&store, &tenant, &p, deadline)?;
    let mut values: BTreeMap<&String, BTreeSet<&String>> = BTreeMap::new();
    for l in &lines {
        for (k, v) in &l.labels.stream {
            values.entry(k).or_default().insert(v);
        }
    }
    let out: Vec<Value> = values
        .iter()
        .map(|(k, v)| json!({"label": k, "cardinality": v.len()}))
        .collect();
    Ok(json!({"detectedLabels": out}))
});

handler!(detected_fields, |store, tenant, p, deadline| {
    let Selected { lines, .. } = lines(&store, &tenant, &p, deadline)?;
    let mut values: BTreeMap<&String, BTreeSet<&String>> = BTreeMap::new();
    for l in &lines {
        for (k, v) in &l.labels.metadata {
            values.entry(k).or_default().insert(v);
        }
    }
    let out: Vec<Value> = values
        .iter()
        .map(|(k, v)| {
            let numeric = v.iter().all(|s| s.parse::<f64>().is_ok());
            let ty = if numeric { "float" } else { "string" };
            json!({"label": k, "type": ty, "cardinality": v.len(), "parsers": null})
        })
        .collect();
    Ok(json!({"fields": out, "limit": 1000}))
});

async fn patterns(_tenant: crate::http::Tenant) -> Response {
    axum::Json(json!({"status": "success", "data": []})).into_response()
}

async fn buildinfo() -> Response {
    axum::Json(json!({
        "version": "3.4.0",
        "revision": "sightline",
        "branch": "main",
        "buildUser": "sightline",
        "buildDate": "",
        "goVersion": "",
    }))
    .into_response()
}
