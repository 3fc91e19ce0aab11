//! The HTTP listener's router. Each group of routes lives in its own module and contributes
//! a `routes()` function; query APIs are added the same way.
//!
//! * [`otlp`]: `POST /v1/traces`, `/v1/metrics`, `/v1/logs` (OTLP/HTTP);
//! * [`ops`]: `GET /metrics`, `/health`, `/ready`;
//! * [`detect`]: `POST /api/v1/detect/{entropy,hallucination,granger}`;
//! * [`detectors`]: `/api/v1/detectors[/{name}[/run]]`, `/api/v1/anomalies`, `/api/v1/annotations`;
//! * [`aggregate`]: `POST /api/v1/aggregate`, `GET /api/v1/aggregate/fields`;
//! * [`openapi`]: `GET /api/v1/openapi.json`, the document of all of the above;
//! * [`prometheus`]: the Prometheus HTTP API and remote write (`/api/v1/query`, `/api/v1/write`, ...);
//! * [`logs`]: `/api/v1/logs/{search,histogram}`; [`loki`]: the Loki API subset;
//! * [`traces`]: `/api/v1/traces/{id}`, `/api/v1/traces/{search,red}`; [`tempo`]: the Tempo API subset;
//! * [`quality`]: `/api/v1/quality`, `/api/v1/quality/{tokens,values}` (LLM quality over time).

pub mod aggregate;
pub mod detect;
pub mod detectors;
pub mod logs;
pub mod loki;
pub mod openapi;
pub mod ops;
pub mod otlp;
pub(crate) mod params;
pub mod prometheus;
pub mod quality;
pub mod tempo;
pub mod traces;

use std::sync::Arc;

use axum::Router;

use crate::ingest::Ingest;

/// State shared by every handler.
pub type AppState = Arc<Ingest>;

/// The tenant of a request, from its `Authorization: Bearer` token (auth on) or its
/// `X-Scope-OrgID` header (auth off); see [`crate::auth`]. Every query and ingest route calls
/// this before touching the store, so no request reads or writes another tenant's data.
pub fn request_tenant(
    state: &AppState,
    headers: &axum::http::HeaderMap,
) -> Result<sightline_storage::TenantId, crate::IngestError> {
    state.tenant(
        headers.get("authorization").map(|v| v.as_bytes()),
        headers.get("x-scope-orgid").map(|v| v.as_bytes()),
    )
}

/// The native APIs' error answer: `{"status": "error", "error": "..."}` with `status`.
pub fn api_error(
    status: axum::http::StatusCode,
    msg: impl std::fmt::Display,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        status,
        axum::Json(serde_json::json!({"status": "error", "error": msg.to_string()})),
    )
        .into_response()
}

/// The full router.
pub fn router(state: AppState) -> Router {
    Router::new()
        .merge(otlp::routes())
        .merge(detect::routes())
        .merge(detectors::routes())
        .merge(aggregate::routes())
        .merge(logs::routes())
        .merge(loki::routes())
        .merge(ops::routes())
        .merge(openapi::routes())
        .merge(prometheus::routes())
        .merge(traces::routes())
        .merge(tempo::routes())
        .merge(quality::routes())
        .layer(tower_http::catch_panic::CatchPanicLayer::new())
        .with_state(state)
}
