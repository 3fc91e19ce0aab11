//! Operational endpoints: `/metrics` (the server's own metrics, Prometheus text format),
//! `/health` (liveness: the process answers), `/ready` (readiness: the store is open and
//! the server is not shutting down), and `GET /api/v1/tenants`: whether auth is on and the
//! tenants a caller may pick (with auth on, only its token's; with auth off, every tenant
//! with data, and `default`), which the web UI and other clients read before anything else.

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use sightline_storage::TenantId;

use super::{ApiError, AppState, request_tenant};

/// The routes of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/api/v1/tenants", get(tenants))
}

async fn tenants(
    State(st): State<AppState>,
    headers: axum::http::HeaderMap,
) -> Result<axum::response::Response, ApiError> {
    let auth = st.auth_enabled();
    let names: Vec<String> = if auth {
        // A missing or unknown token is refused here like everywhere else (401).
        vec![request_tenant(&st, &headers)?.as_str().to_owned()]
    } else {
        let mut all: Vec<String> = st
            .store()
            .tenants()
            .iter()
            .map(|t| t.as_str().to_owned())
            .collect();
        if !all.iter().any(|t| t == TenantId::DEFAULT) {
            all.insert(0, TenantId::DEFAULT.to_owned());
        }
        all
    };
    Ok(axum::Json(serde_json::json!({"auth": auth, "tenants": names})).into_response())
}

async fn metrics(State(st): State<AppState>) -> impl IntoResponse {
    let stats = st.store().stats();
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        {
            let mut text = st.telemetry().render(Some(&stats));
            if let Some(a) = st.assembler() {
                a.render(&mut text);
            }
            super::prometheus::query::render_cache_metrics(&st.query_cache.stats(), &mut text);
            text
        },
    )
}

async fn health() -> impl IntoResponse {
    (StatusCode::OK, "ok\n")
}

async fn ready(State(st): State<AppState>) -> impl IntoResponse {
    if st.is_shutting_down() {
        (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n")
    } else {
        (StatusCode::OK, "ready\n")
    }
}
