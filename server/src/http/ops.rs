//! Operational endpoints: `/metrics` (the server's own metrics, Prometheus text format),
//! `/health` (liveness: the process answers) and `/ready` (readiness: the store is open and
//! the server is not shutting down).

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use super::AppState;

/// The routes of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/health", get(health))
        .route("/ready", get(ready))
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
