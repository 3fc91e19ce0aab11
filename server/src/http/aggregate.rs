//! The native aggregation API over spans and logs:
//!
//! * `POST /api/v1/aggregate`: a [`PlanRequest`] as JSON (signal, time range, matchers,
//!   full text, numeric filters, group-by keys and time bucket, aggregates, ordering, limit)
//!   -> `{"status": "success", "data": {"columns": [...], "rows": [[...]], "explain": {...}}}`;
//! * `GET /api/v1/aggregate/fields`: the numeric fields and promoted keys a plan can name.
//!
//! Errors are `{"status": "error", "error": "..."}`: 400 for a malformed plan, 401 without a
//! valid token, 422 when the plan cannot run (too many groups). Plans run on the blocking pool,
//! reading the caller's tenant only.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use sightline_query::QueryError;
use sightline_query::plan::{KNOWN_FIELDS, PlanRequest, execute};
use sightline_storage::Signal;
use sightline_storage::schema::{LOG_PROMOTED_KEYS, SPAN_PROMOTED_KEYS};

use super::{AppState, api_error, request_tenant};

/// The routes of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/aggregate", post(aggregate))
        .route("/api/v1/aggregate/fields", get(fields))
}

/// The HTTP status of a query error.
pub fn query_status(e: &QueryError) -> StatusCode {
    match e {
        QueryError::Parse(_) | QueryError::Unsupported(_) | QueryError::BadRequest(_) => {
            StatusCode::BAD_REQUEST
        }
        QueryError::Execution(_) => StatusCode::UNPROCESSABLE_ENTITY,
        QueryError::Timeout => StatusCode::SERVICE_UNAVAILABLE,
        QueryError::Storage(sightline_storage::StorageError::InvalidQuery(_)) => {
            StatusCode::BAD_REQUEST
        }
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

async fn aggregate(State(st): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let tenant = match request_tenant(&st, &headers) {
        Ok(t) => t,
        Err(e) => return api_error(StatusCode::UNAUTHORIZED, e),
    };
    let req: PlanRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return api_error(StatusCode::BAD_REQUEST, format!("invalid plan: {e}")),
    };
    let plan = match req.into_plan(tenant) {
        Ok(p) => p,
        Err(e) => return api_error(query_status(&e), e),
    };
    let store = st.store().clone();
    match tokio::task::spawn_blocking(move || execute(&store, &plan)).await {
        Ok(Ok(table)) => axum::Json(json!({"status": "success", "data": table})).into_response(),
        Ok(Err(e)) => api_error(query_status(&e), e),
        Err(e) => api_error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

async fn fields(State(st): State<AppState>, headers: HeaderMap) -> Response {
    if let Err(e) = request_tenant(&st, &headers) {
        return api_error(StatusCode::UNAUTHORIZED, e);
    }
    let numeric = |s: Signal| -> Vec<&str> {
        KNOWN_FIELDS
            .iter()
            .filter(|(sig, _, _)| *sig == s)
            .map(|(_, n, _)| *n)
            .collect()
    };
    let keys = |t: &[(&'static str, &'static str)]| -> Vec<&'static str> {
        t.iter().map(|(k, _)| *k).collect()
    };
    axum::Json(json!({"status": "success", "data": {
        "spans": {"numeric": numeric(Signal::Spans), "keys": keys(SPAN_PROMOTED_KEYS)},
        "logs": {"numeric": numeric(Signal::Logs), "keys": keys(LOG_PROMOTED_KEYS)},
    }}))
    .into_response()
}
