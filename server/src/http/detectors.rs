//! The detector API (see docs/detectors.md):
//!
//! * `POST /api/v1/detectors` (201, 409 when the name exists), `GET /api/v1/detectors`;
//! * `GET|PUT|DELETE /api/v1/detectors/{name}`, `POST /api/v1/detectors/{name}/run` (202);
//! * `GET /api/v1/anomalies?detector=&start=&end=&limit=` -> `{"anomalies": [...]}`;
//! * `GET /api/v1/annotations?start=&end=&detector=` -> Grafana annotations.
//!
//! Tenants as everywhere else ([`super::request_tenant`]); a tenant sees and changes only its
//! own detectors. Errors are `{"status": "error", "error": "..."}`.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use sightline_storage::TenantId;

use super::AppState;
use crate::detectors::{AnomalyEvent, DetectorError, DetectorSpec, Detectors};

/// Most anomalies one request returns.
pub const MAX_LIMIT: usize = 10_000;

/// The routes of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/detectors", get(list).post(create))
        .route(
            "/api/v1/detectors/{name}",
            get(show).put(replace).delete(remove),
        )
        .route("/api/v1/detectors/{name}/run", post(run_now))
        .route("/api/v1/anomalies", get(anomalies))
        .route("/api/v1/annotations", get(annotations))
}

/// An error answer: status plus message, rendered as `{"status": "error", "error": ...}`.
struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        super::api_error(self.0, self.1)
    }
}

fn err(status: StatusCode, msg: impl std::fmt::Display) -> ApiError {
    ApiError(status, msg.to_string())
}

fn from_detector_error(e: DetectorError) -> ApiError {
    let status = match &e {
        DetectorError::Invalid(_) => StatusCode::BAD_REQUEST,
        DetectorError::Exists(_) => StatusCode::CONFLICT,
        DetectorError::NotFound(_) => StatusCode::NOT_FOUND,
        DetectorError::Disabled => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    err(status, e)
}

/// Tenant and detectors of a request.
fn prepare(st: &AppState, headers: &HeaderMap) -> Result<(TenantId, Arc<Detectors>), ApiError> {
    let tenant =
        super::request_tenant(st, headers).map_err(|e| err(StatusCode::UNAUTHORIZED, e))?;
    let d = st.detectors().cloned().ok_or_else(|| {
        err(
            StatusCode::SERVICE_UNAVAILABLE,
            "detectors are not available in this process",
        )
    })?;
    Ok((tenant, d))
}

fn parse_spec(body: &[u8], name: Option<&str>) -> Result<DetectorSpec, ApiError> {
    let mut v: Value = serde_json::from_slice(body)
        .map_err(|e| err(StatusCode::BAD_REQUEST, format!("invalid JSON: {e}")))?;
    if let (Some(name), Some(obj)) = (name, v.as_object_mut()) {
        match obj.get("name") {
            None => {
                obj.insert("name".into(), Value::String(name.to_owned()));
            }
            Some(Value::String(n)) if n == name => {}
            Some(other) => {
                return Err(err(
                    StatusCode::BAD_REQUEST,
                    format!("body name {other} does not match the path's {name:?}"),
                ));
            }
        }
    }
    let spec: DetectorSpec = serde_json::from_value(v)
        .map_err(|e| err(StatusCode::BAD_REQUEST, format!("invalid detector: {e}")))?;
    spec.validate()
        .map_err(|e| err(StatusCode::BAD_REQUEST, format!("invalid detector: {e}")))?;
    Ok(spec)
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, DetectorError> + Send + 'static,
) -> Result<T, ApiError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(from_detector_error(e)),
        Err(e) => Err(err(StatusCode::INTERNAL_SERVER_ERROR, e)),
    }
}

async fn list(State(st): State<AppState>, headers: HeaderMap) -> Response {
    let (tenant, d) = match prepare(&st, &headers) {
        Ok(x) => x,
        Err(r) => return r.into_response(),
    };
    let items: Vec<Value> = d
        .registry()
        .list(&tenant)
        .iter()
        .map(|x| x.to_json())
        .collect();
    axum::Json(json!({ "detectors": items })).into_response()
}

async fn create(State(st): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    put_detector(st, headers, body, None).await
}

async fn replace(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    put_detector(st, headers, body, Some(name)).await
}

async fn put_detector(
    st: AppState,
    headers: HeaderMap,
    body: Bytes,
    name: Option<String>,
) -> Response {
    let (tenant, d) = match prepare(&st, &headers) {
        Ok(x) => x,
        Err(r) => return r.into_response(),
    };
    let spec = match parse_spec(&body, name.as_deref()) {
        Ok(s) => s,
        Err(r) => return r.into_response(),
    };
    let replace = name.is_some();
    match blocking(move || d.registry().put(&tenant, spec, replace)).await {
        Ok((det, existed)) => {
            let status = if existed {
                StatusCode::OK
            } else {
                StatusCode::CREATED
            };
            (status, axum::Json(det.to_json())).into_response()
        }
        Err(r) => r.into_response(),
    }
}

async fn show(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Response {
    let (tenant, d) = match prepare(&st, &headers) {
        Ok(x) => x,
        Err(r) => return r.into_response(),
    };
    match d.registry().get(&tenant, &name) {
        Some(det) => axum::Json(det.to_json()).into_response(),
        None => from_detector_error(DetectorError::NotFound(name)).into_response(),
    }
}

async fn remove(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Response {
    let (tenant, d) = match prepare(&st, &headers) {
        Ok(x) => x,
        Err(r) => return r.into_response(),
    };
    let n = name.clone();
    match blocking(move || d.registry().delete(&tenant, &n)).await {
        Ok(true) => axum::Json(json!({"status": "success", "deleted": name})).into_response(),
        Ok(false) => from_detector_error(DetectorError::NotFound(name)).into_response(),
        Err(r) => r.into_response(),
    }
}

async fn run_now(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Response {
    let (tenant, d) = match prepare(&st, &headers) {
        Ok(x) => x,
        Err(r) => return r.into_response(),
    };
    let Some(det) = d.registry().get(&tenant, &name) else {
        return from_detector_error(DetectorError::NotFound(name)).into_response();
    };
    match d.request_run(&det) {
        Ok(()) => (
            StatusCode::ACCEPTED,
            axum::Json(json!({"status": "accepted", "detector": name})),
        )
            .into_response(),
        Err(e) => from_detector_error(e).into_response(),
    }
}

/// A time parameter in ms: RFC 3339 or Unix seconds; integers beyond year 5138 in seconds
/// (more than 11 digits) are read as Unix milliseconds, which Grafana sends.
fn time_ms(s: &str) -> Result<i64, String> {
    let s = s.trim();
    if let Ok(n) = s.parse::<i64>()
        && n.unsigned_abs() >= 100_000_000_000
    {
        return Ok(n);
    }
    sightline_query::time::parse_time(s)
        .map(|t| t.0 / 1_000_000)
        .map_err(|e| e.to_string())
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
    let bad = |e: String| err(StatusCode::BAD_REQUEST, e);
    let start = get("start").map(time_ms).transpose().map_err(bad)?;
    let end = get("end").map(time_ms).transpose().map_err(bad)?;
    let limit = match get("limit") {
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| bad(format!("limit must be in 1..={MAX_LIMIT}, got {l:?}")))?,
        None => 1000,
    };
    let (start, end) = (start.unwrap_or(i64::MIN), end.unwrap_or(i64::MAX));
    if end < start {
        return Err(bad("end must not be before start".into()));
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
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let (tenant, d) = match prepare(&st, &headers) {
        Ok(x) => x,
        Err(r) => return r.into_response(),
    };
    let f = match filter(query.as_deref()) {
        Ok(f) => f,
        Err(r) => return r.into_response(),
    };
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
    axum::Json(json!({ "anomalies": list })).into_response()
}

async fn annotations(
    State(st): State<AppState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let (tenant, d) = match prepare(&st, &headers) {
        Ok(x) => x,
        Err(r) => return r.into_response(),
    };
    let f = match filter(query.as_deref()) {
        Ok(f) => f,
        Err(r) => return r.into_response(),
    };
    let now = crate::detectors::now_ms();
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
    axum::Json(Value::Array(list)).into_response()
}
