//! The detector API (see docs/detectors.md):
//!
//! * `POST /api/v1/detectors` (201, 409 when the name exists), `GET /api/v1/detectors`;
//! * `GET|PUT|DELETE /api/v1/detectors/{name}`, `POST /api/v1/detectors/{name}/run` (202);
//! * `GET /api/v1/anomalies?detector=&start=&end=&limit=` -> `{"anomalies": [...]}`;
//! * `GET /api/v1/annotations?start=&end=&detector=` -> Grafana annotations.
//!
//! Tenants as everywhere else ([`super::Tenant`]); a tenant sees and changes only its own
//! detectors. Definitions are JSON (415 otherwise), validated and stored through the
//! [`super::Runner`]. Errors are [`super::ApiError`]s: 400 invalid definition, 404 unknown
//! detector, 409 name taken, 503 detectors off.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::handler::Handler;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use sightline_query::time::{TimeDialect, TimeError};
use sightline_storage::TenantId;

use super::{ApiError, AppState, ErrorKind, Tenant, guard};
use sightline_detectors::{AnomalyEvent, DetectorError, DetectorSpec, Detectors};

/// Most anomalies one request returns.
pub const MAX_LIMIT: usize = 10_000;

/// The routes of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/detectors",
            get(list).post(create.layer(axum::middleware::from_fn(guard::require_json))),
        )
        .route(
            "/api/v1/detectors/{name}",
            get(show)
                .put(replace.layer(axum::middleware::from_fn(guard::require_json)))
                .delete(remove),
        )
        .route("/api/v1/detectors/{name}/run", post(run_now))
        .route("/api/v1/anomalies", get(anomalies))
        .route("/api/v1/annotations", get(annotations))
}

/// Detectors of this process, or 503.
fn detectors(st: &AppState) -> Result<Arc<Detectors>, ApiError> {
    st.detectors().cloned().ok_or_else(|| {
        ApiError::new(
            ErrorKind::Unavailable,
            "detectors are not available in this process",
        )
    })
}

fn parse_spec(body: &[u8], name: Option<&str>) -> Result<DetectorSpec, ApiError> {
    let mut v: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_data(format!("invalid JSON: {e}")))?;
    if let (Some(name), Some(obj)) = (name, v.as_object_mut()) {
        match obj.get("name") {
            None => {
                obj.insert("name".into(), Value::String(name.to_owned()));
            }
            Some(Value::String(n)) if n == name => {}
            Some(other) => {
                return Err(ApiError::bad_data(format!(
                    "body name {other} does not match the path's {name:?}"
                )));
            }
        }
    }
    let spec: DetectorSpec = serde_json::from_value(v)
        .map_err(|e| ApiError::bad_data(format!("invalid detector: {e}")))?;
    spec.validate()
        .map_err(|e| ApiError::bad_data(format!("invalid detector: {e}")))?;
    Ok(spec)
}

async fn list(State(st): State<AppState>, Tenant(tenant): Tenant) -> Result<Response, ApiError> {
    let d = detectors(&st)?;
    let items: Vec<Value> = d
        .registry()
        .list(&tenant)
        .iter()
        .map(|x| x.to_json())
        .collect();
    Ok(axum::Json(json!({ "detectors": items })).into_response())
}

async fn create(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    body: Bytes,
) -> Result<Response, ApiError> {
    put_detector(st, tenant, body, None).await
}

async fn replace(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    put_detector(st, tenant, body, Some(name)).await
}

async fn put_detector(
    st: AppState,
    tenant: TenantId,
    body: Bytes,
    name: Option<String>,
) -> Result<Response, ApiError> {
    let d = detectors(&st)?;
    let replace = name.is_some();
    let t = tenant.clone();
    let (det, existed) = st
        .run(&tenant, move |_| {
            let spec = parse_spec(&body, name.as_deref())?;
            Ok(d.registry().put(&t, spec, replace)?)
        })
        .await?;
    let status = if existed {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, axum::Json(det.to_json())).into_response())
}

async fn show(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let d = detectors(&st)?;
    match d.registry().get(&tenant, &name) {
        Some(det) => Ok(axum::Json(det.to_json()).into_response()),
        None => Err(DetectorError::NotFound(name).into()),
    }
}

async fn remove(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let d = detectors(&st)?;
    let (n, t) = (name.clone(), tenant.clone());
    if st
        .run(&tenant, move |_| Ok(d.registry().delete(&t, &n)?))
        .await?
    {
        Ok(axum::Json(json!({"status": "success", "deleted": name})).into_response())
    } else {
        Err(DetectorError::NotFound(name).into())
    }
}

async fn run_now(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let d = detectors(&st)?;
    let Some(det) = d.registry().get(&tenant, &name) else {
        return Err(DetectorError::NotFound(name).into());
    };
    d.request_run(&det)?;
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(json!({"status": "accepted", "detector": name})),
    )
        .into_response())
}

/// A time parameter in ms: RFC 3339 or Unix seconds; integers beyond year 5138 in seconds
/// (more than 11 digits) are read as Unix milliseconds, which Grafana sends.
fn time_ms(s: &str) -> Result<i64, TimeError> {
    let s = s.trim();
    if let Ok(n) = s.parse::<i64>()
        && n.unsigned_abs() >= 100_000_000_000
    {
        return Ok(n);
    }
    TimeDialect::Rfc3339OrSeconds
        .parse(s)
        .map(|t| t.0 / 1_000_000)
}

struct Filter {
    detector: Option<String>,
    start: i64,
    end: i64,
    limit: usize,
}

fn filter(query: Option<&str>) -> Result<Filter, ApiError> {
    let p: Vec<(String, String)> = query
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    let get = |k: &str| super::params::get(&p, k);
    let bad = |e: TimeError| ApiError::bad_data(e.to_string());
    let start = get("start").map(time_ms).transpose().map_err(bad)?;
    let end = get("end").map(time_ms).transpose().map_err(bad)?;
    let limit = match get("limit") {
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| {
                ApiError::bad_data(format!("limit must be in 1..={MAX_LIMIT}, got {l:?}"))
            })?,
        None => 1000,
    };
    let (start, end) = (start.unwrap_or(i64::MIN), end.unwrap_or(i64::MAX));
    if end < start {
        return Err(ApiError::bad_data("end must not be before start"));
    }
    Ok(Filter {
        detector: get("detector").map(str::to_owned),
        start,
        end,
        limit,
    })
}

/// Events of the tenant overlapping the filter, newest first.
fn select(d: &Detectors, tenant: &TenantId, f: &Filter) -> Vec<AnomalyEvent> {
    let mut out: Vec<AnomalyEvent> = d
        .registry()
        .list(tenant)
        .iter()
        .filter(|det| f.detector.as_deref().is_none_or(|n| det.name() == n))
        .flat_map(|det| det.events.lock().clone())
        .filter(|e| e.start_ms <= f.end && e.end_ms.unwrap_or(i64::MAX) >= f.start)
        .collect();
    out.sort_by(|a, b| b.start_ms.cmp(&a.start_ms).then(a.id.cmp(&b.id)));
    out.truncate(f.limit);
    out
}

async fn anomalies(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let d = detectors(&st)?;
    let f = filter(query.as_deref())?;
    let list: Vec<Value> = select(&d, &tenant, &f)
        .into_iter()
        .map(|e| {
            let mut v = serde_json::to_value(&e).unwrap_or_default();
            if let Some(o) = v.as_object_mut() {
                o.remove("last_ms");
            }
            v
        })
        .collect();
    Ok(axum::Json(json!({ "anomalies": list })).into_response())
}

async fn annotations(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let d = detectors(&st)?;
    let f = filter(query.as_deref())?;
    let now = st.now().as_millis();
    let list: Vec<Value> = select(&d, &tenant, &f)
        .into_iter()
        .map(|e| {
            let mut tags = vec![
                "anomaly".to_owned(),
                e.detector.clone(),
                e.level.clone(),
                e.direction.clone(),
            ];
            if let Some(k) = &e.kind {
                tags.push(k.clone());
            }
            let open = if e.end_ms.is_none() { " (open)" } else { "" };
            json!({
                "time": e.start_ms,
                "timeEnd": e.end_ms.unwrap_or(now.max(e.last_ms)),
                "title": format!("{}: {} anomaly, {}{open}", e.detector, e.level, e.direction),
                "text": e.explanation,
                "tags": tags,
            })
        })
        .collect();
    Ok(axum::Json(Value::Array(list)).into_response())
}
