//! The Prometheus HTTP API (the subset Grafana's built-in Prometheus datasource calls) and
//! Prometheus remote write 1.0 ingest.
//!
//! * [`query`]: `/api/v1/query`, `/api/v1/query_range`, `/api/v1/query_exemplars` (always
//!   empty), `/api/v1/format_query`;
//! * [`meta`]: `/api/v1/series`, `/api/v1/labels`, `/api/v1/label/{name}/values`,
//!   `/api/v1/metadata`, `/api/v1/status/buildinfo`, `/api/v1/status/runtimeinfo`, and empty
//!   `/api/v1/rules`, `/api/v1/alerts`;
//! * [`remote_write`]: `POST /api/v1/write` (snappy-compressed `prometheus.WriteRequest`);
//! * [`params`]: parameter parsing shared by all of them.
//!
//! Every read endpoint answers GET and POST (`application/x-www-form-urlencoded`), reads only
//! the caller's tenant ([`crate::http::request_tenant`]) and answers Prometheus' envelopes:
//! `{"status":"success","data":..,"warnings"?:[..]}` or
//! `{"status":"error","errorType":..,"error":..}` with 400 `bad_data`, 401 `unauthorized`,
//! 422 `execution`, 503 `timeout` / `unavailable`, 500 `internal`.

pub mod meta;
pub mod params;
pub mod query;
pub mod remote_write;

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use parking_lot::RwLock;
use sightline_storage::TenantId;

use super::AppState;
use params::Params;

/// Most metric families whose remote-write metadata is remembered per tenant.
pub const MAX_METADATA_FAMILIES: usize = 100_000;

/// Type, help and unit of one metric family, as `/api/v1/metadata` reports them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FamilyMeta {
    /// `counter`, `gauge`, `histogram`, `summary`, `gaugehistogram`, `info`, `stateset` or
    /// `unknown`.
    pub kind: String,
    /// Description.
    pub help: String,
    /// Unit.
    pub unit: String,
}

/// State of these routes beyond [`AppState`]: the metadata that remote-write clients sent
/// (kept in memory, since the store keeps type, help and unit only on series it creates).
#[derive(Debug, Default)]
pub struct PromState {
    metadata: RwLock<HashMap<TenantId, HashMap<String, FamilyMeta>>>,
}

impl PromState {
    /// Remembers remote-write metadata of a tenant (newest wins; bounded per tenant).
    pub fn remember_metadata(&self, tenant: &TenantId, families: Vec<(String, FamilyMeta)>) {
        if families.is_empty() {
            return;
        }
        let mut all = self.metadata.write();
        let map = all.entry(tenant.clone()).or_default();
        for (name, m) in families {
            if map.len() < MAX_METADATA_FAMILIES || map.contains_key(&name) {
                map.insert(name, m);
            }
        }
    }

    /// Remote-write metadata of a tenant's family.
    pub fn family_metadata(&self, tenant: &TenantId, family: &str) -> Option<FamilyMeta> {
        self.metadata.read().get(tenant)?.get(family).cloned()
    }

    /// Every family with remote-write metadata of a tenant.
    pub fn all_metadata(&self, tenant: &TenantId) -> Vec<(String, FamilyMeta)> {
        self.metadata
            .read()
            .get(tenant)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    }
}

/// The routes of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/query", get(query::instant).post(query::instant))
        .route("/api/v1/query_range", get(query::range).post(query::range))
        .route(
            "/api/v1/query_exemplars",
            get(query::exemplars).post(query::exemplars),
        )
        .route(
            "/api/v1/format_query",
            get(query::format).post(query::format),
        )
        .route("/api/v1/series", get(meta::series).post(meta::series))
        .route("/api/v1/labels", get(meta::labels).post(meta::labels))
        .route("/api/v1/label/{name}/values", get(meta::label_values))
        .route("/api/v1/metadata", get(meta::metadata))
        .route("/api/v1/status/buildinfo", get(meta::buildinfo))
        .route("/api/v1/status/runtimeinfo", get(meta::runtimeinfo))
        .route("/api/v1/rules", get(meta::rules))
        .route("/api/v1/alerts", get(meta::alerts))
        .route("/api/v1/write", post(remote_write::write))
        .layer(Extension(Arc::new(PromState::default())))
}

pub use crate::http::error::ApiError;

/// `{"status":"success","data":<data>}` with `warnings` when there are any; `data` is
/// already-serialised JSON.
pub fn success(data: &str, warnings: &[String]) -> Response {
    let mut out = String::with_capacity(data.len() + 64);
    out.push_str("{\"status\":\"success\",\"data\":");
    out.push_str(data);
    if !warnings.is_empty() {
        out.push_str(",\"warnings\":");
        out.push_str(&serde_json::Value::from(warnings.to_vec()).to_string());
    }
    out.push('}');
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        out,
    )
        .into_response()
}

/// The caller's tenant, or the error to answer.
pub fn tenant(st: &AppState, headers: &HeaderMap) -> Result<TenantId, ApiError> {
    super::request_tenant(st, headers)
}

/// The parameters of a request: its query string, plus its body when it is a form POST.
pub fn request_params(
    method: &Method,
    headers: &HeaderMap,
    query: Option<&str>,
    body: &Bytes,
) -> Params {
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| {
            m.trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        });
    let form = (method == Method::POST && is_form).then_some(body.as_ref());
    Params::parse(query, form)
}
