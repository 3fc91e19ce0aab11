//! The HTTP listener's router. Each group of routes lives in its own module and contributes
//! a `routes()` function; query APIs are added the same way.
//!
//! * [`otlp`]: `POST /v1/traces`, `/v1/metrics`, `/v1/logs` (OTLP/HTTP);
//! * [`ops`]: `GET /metrics`, `/health`, `/ready`;
//! * [`detect`]: `POST /api/v1/detect/{entropy,hallucination,granger}`.

pub mod detect;
pub mod ops;
pub mod otlp;

use std::sync::Arc;

use axum::Router;

use crate::ingest::Ingest;

/// State shared by every handler.
pub type AppState = Arc<Ingest>;

/// The full router.
pub fn router(state: AppState) -> Router {
    Router::new()
        .merge(otlp::routes())
        .merge(detect::routes())
        .merge(ops::routes())
        .layer(tower_http::catch_panic::CatchPanicLayer::new())
        .with_state(state)
}
