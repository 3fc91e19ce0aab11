//! The HTTP listener's router. Each group of routes lives in its own module and contributes
//! a `routes()` function; query APIs are added the same way.
//!
//! The plumbing every route shares: [`state`] ([`AppState`] and the [`Tenant`] extractor: one
//! status for the same tenancy mistake everywhere), [`error`] (one [`ApiError`], classified
//! once, rendered in each API's body shape), [`runner`] (all query, metadata and detect work
//! runs on the blocking pool under a deadline the engine checks, within a global and a
//! per-tenant concurrency cap), [`guard`] (Host, Origin, content-type and CORS rules for
//! browsers), [`listener`] (connection cap and header/idle timeouts).
//!
//! * [`otlp`]: `POST /v1/traces`, `/v1/metrics`, `/v1/logs` (OTLP/HTTP);
//! * [`ops`]: `GET /metrics`, `/health`, `/ready`, `/api/v1/tenants`;
//! * [`overview`]: `GET /api/v1/overview` (what a tenant has stored, per signal);
//! * [`detect`]: `POST /api/v1/detect/{entropy,hallucination,granger}`;
//! * [`detectors`]: `/api/v1/detectors[/{name}[/run]]`, `/api/v1/anomalies`, `/api/v1/annotations`;
//! * [`aggregate`]: `POST /api/v1/aggregate`, `GET /api/v1/aggregate/fields`;
//! * [`openapi`]: `GET /api/v1/openapi.json`, the document of all of the above;
//! * [`prometheus`]: the Prometheus HTTP API and remote write (`/api/v1/query`, `/api/v1/write`, ...);
//! * [`logs`]: `/api/v1/logs/{search,histogram}`; [`loki`]: the Loki API subset;
//! * [`traces`]: `/api/v1/traces/{id}`, `/api/v1/traces/{search,red}`; [`tempo`]: the Tempo API subset;
//! * [`quality`]: `/api/v1/quality`, `/api/v1/quality/{tokens,values}` (LLM quality over time);
//! * [`ui`]: the built-in web UI at `/` (files embedded from `ui/`).

pub mod aggregate;
pub mod base_path;
pub mod detect;
pub mod detectors;
pub mod error;
pub mod guard;
pub mod listener;
pub mod logs;
pub mod loki;
pub mod openapi;
pub mod ops;
pub mod otlp;
pub mod overview;
pub(crate) mod params;
pub mod prometheus;
pub mod quality;
pub mod runner;
pub mod state;
pub mod tempo;
pub mod traces;
pub mod ui;

use std::time::Duration;

use axum::Router;

pub use error::{ApiError, Dialect, ErrorKind};
pub use runner::Runner;
pub use state::{AppState, Tenant, request_tenant};

/// The native APIs' success answer: `{"status": "success", "data": data}`.
pub fn success(data: serde_json::Value) -> axum::response::Response {
    use axum::response::IntoResponse;
    axum::Json(serde_json::json!({"status": "success", "data": data})).into_response()
}

/// Runs `work` through [`AppState::run`] and answers the native envelope with its value.
pub async fn answer(
    st: &AppState,
    tenant: &sightline_storage::TenantId,
    work: impl FnOnce(&sightline_storage::Deadline) -> Result<serde_json::Value, ApiError>
    + Send
    + 'static,
) -> Result<axum::response::Response, ApiError> {
    Ok(success(st.run(tenant, work).await?))
}

/// The full router: every API, the browser protections of [`guard`], the request body
/// timeout, panics turned into 500s, and answers gzip-compressed for clients that accept it
/// (a 10,000-span trace is 8 MB of JSON, about a tenth of that compressed); under the
/// configured [`base_path`] when there is one.
pub fn router(state: AppState) -> Router {
    let body_timeout = Duration::from_secs(state.limits().body_read_timeout_secs);
    let cors = guard::cors_layer(&state.http);
    let app = Router::new()
        .merge(otlp::routes())
        .merge(detect::routes())
        .merge(detectors::routes())
        .merge(aggregate::routes())
        .merge(logs::routes())
        .merge(loki::routes())
        .merge(ops::routes())
        .merge(overview::routes())
        .merge(openapi::routes())
        .merge(prometheus::routes())
        .merge(traces::routes())
        .merge(tempo::routes())
        .merge(quality::routes())
        .merge(ui::routes())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::browser_guard,
        ))
        .layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
            body_timeout,
        ))
        .layer(tower_http::catch_panic::CatchPanicLayer::new())
        .layer(tower_http::compression::CompressionLayer::new().gzip(true));
    let app = match cors {
        Some(c) => app.layer(c),
        None => app,
    };
    let base = state.http.base_path.clone();
    let app = app.with_state(state);
    if base.is_root() {
        return app;
    }
    // Everything under the base path: its prefix is stripped before the routes see it.
    Router::new()
        .fallback_service(app)
        .layer(axum::middleware::from_fn_with_state(base, base_path::strip))
}
