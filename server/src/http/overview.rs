//! `GET /api/v1/overview`: what the caller's tenant has stored, per signal: rows (and how many
//! are not yet flushed), segments and the time range of the rows, plus the number of metric
//! series. Read from segment metadata and memtable bounds ([`sightline_storage::Store::extent`]),
//! so it costs no scan whatever the store's size. Times are nanoseconds as decimal strings
//! (JavaScript numbers cannot hold them exactly).

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};

use super::{ApiError, AppState, Tenant, success};

/// The routes of this module.
pub fn routes() -> Router<AppState> {
    Router::new().route("/api/v1/overview", get(overview))
}

async fn overview(
    State(st): State<AppState>,
    Tenant(tenant): Tenant,
) -> Result<Response, ApiError> {
    let store = st.store().clone();
    let t = tenant.clone();
    let data = st
        .run(&tenant, move |_deadline| {
            let signals: Vec<Value> = store
                .extent(&t)
                .into_iter()
                .map(|e| {
                    json!({
                        "signal": e.signal.as_str(),
                        "rows": e.rows,
                        "unflushed_rows": e.unflushed_rows,
                        "segments": e.segments,
                        "start_unix_nano": e.min_time.map(|t| t.0.to_string()),
                        "end_unix_nano": e.max_time.map(|t| t.0.to_string()),
                    })
                })
                .collect();
            let series = store.series(&t, &[]).len();
            Ok(json!({"tenant": t.as_str(), "signals": signals, "series": series}))
        })
        .await?;
    Ok(success(data))
}
