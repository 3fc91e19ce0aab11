//! The native aggregation API over spans and logs:
//!
//! * `POST /api/v1/aggregate`: a [`PlanRequest`] as JSON (signal, time range, matchers,
//!   full text, numeric filters, group-by keys and time bucket, aggregates, ordering, limit)
//!   -> `{"status": "success", "data": {"columns": [...], "rows": [[...]], "explain": {...}}}`;
//! * `GET /api/v1/aggregate/fields`: the numeric fields and promoted keys a plan can name.
//!
//! Errors are `{"status": "error", "errorType": .., "error": ".."}` ([`super::error`]): 400 for
//! a malformed plan, 401 without a valid token, 415 for a body that is not JSON, 422 when the
//! plan cannot run (too many groups), 503 past the query deadline. Plans are parsed and run
//! through the [`super::Runner`], reading the caller's tenant only.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::json;
use sightline_query::plan::{KNOWN_FIELDS, PlanRequest, execute};
use sightline_storage::Signal;
use sightline_storage::schema::{LOG_PROMOTED_KEYS, SPAN_PROMOTED_KEYS};

use super::{ApiError, AppState, Tenant, guard, success};

/// The routes of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/aggregate",
            post(aggregate).route_layer(axum::middleware::from_fn(guard::require_json)),
        )
        .route("/api/v1/aggregate/fields", get(fields))
}

async fn aggregate(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
    body: Bytes,
) -> Result<Response, ApiError> {
    let store = st.store().clone();
    let t = tenant.clone();
    let table = st
        .run(&tenant, move |deadline| {
            let req: PlanRequest = serde_json::from_slice(&body)
                .map_err(|e| ApiError::bad_data(format!("invalid plan: {e}")))?;
            let mut plan = req.into_plan(t)?;
            plan.deadline = deadline.clone();
            Ok(execute(&store, &plan)?)
        })
        .await?;
    Ok(success(json!(table)))
}

async fn fields(Tenant(_): Tenant) -> Response {
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
    success(json!({
        "spans": {"numeric": numeric(Signal::Spans), "keys": keys(SPAN_PROMOTED_KEYS)},
        "logs": {"numeric": numeric(Signal::Logs), "keys": keys(LOG_PROMOTED_KEYS)},
    }))
}
