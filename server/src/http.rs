//! The HTTP listener's router. Each group of routes lives in its own module and contributes
//! a `routes()` function; query APIs are added the same way.
//!
//! * [`otlp`]: `POST /v1/traces`, `/v1/metrics`, `/v1/logs` (OTLP/HTTP);
//! * [`ops`]: `GET /metrics`, `/health`, `/ready`;
//! * [`detect`]: `POST /api/v1/detect/{entropy,hallucination,granger}`.

pub mod detect;
pub mod ops;
pub mod otlp;
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

/// The full router.
pub fn router(state: AppState) -> Router {
    Router::new()
        .merge(otlp::routes())
        .merge(detect::routes())
        .merge(ops::routes())
        .merge(traces::routes())
        .merge(tempo::routes())
        .layer(tower_http::catch_panic::CatchPanicLayer::new())
        .with_state(state)
}
