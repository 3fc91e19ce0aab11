//! What every HTTP handler gets: [`AppState`] (the ingest pipeline and through it the store,
//! the [`Runner`], the HTTP settings) and the [`Tenant`] extractor.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use sightline_query::promql::{CacheConfig, ResultCache};
use sightline_storage::TenantId;

use super::error::ApiError;
use super::guard::HttpSettings;
use super::runner::{Runner, RunnerLimits};
use crate::ingest::Ingest;

/// State shared by every handler.
#[derive(Clone, Debug)]
pub struct AppState {
    /// The ingest pipeline: store, limits, auth, telemetry, detectors. Its methods are also
    /// reachable directly on the state.
    pub ingest: Arc<Ingest>,
    /// Runs query, metadata and detect work (slots per tenant, deadlines).
    pub runner: Arc<Runner>,
    /// Listener-level settings (allowed hosts, CORS, base path).
    pub http: Arc<HttpSettings>,
    /// Range query answers kept for repeated dashboard queries; told of every sample change
    /// by the store.
    pub query_cache: Arc<ResultCache>,
}

impl AppState {
    /// State over `ingest` with the runner and the query cache sized by its limits; the cache
    /// is registered with the store.
    pub fn new(ingest: Arc<Ingest>, http: HttpSettings) -> Self {
        let l = ingest.limits();
        let runner = Runner::new(RunnerLimits {
            max_concurrent: l.max_concurrent_queries,
            max_concurrent_per_tenant: l.max_concurrent_queries_per_tenant,
            max_timeout: std::time::Duration::from_secs(l.query_timeout_secs),
        });
        let query_cache = Arc::new(ResultCache::new(CacheConfig {
            max_bytes: l.query_cache_bytes,
            recent_ms: i64::try_from(l.query_cache_recent_secs.saturating_mul(1000))
                .unwrap_or(i64::MAX),
        }));
        if l.query_cache_bytes > 0 {
            ingest.store().observe_samples(query_cache.clone());
        }
        Self {
            ingest,
            runner: Arc::new(runner),
            http: Arc::new(http),
            query_cache,
        }
    }
}

impl AppState {
    /// Runs `work` for `tenant` through the [`Runner`] under the default deadline
    /// (`query_timeout_secs`); routes with a `timeout` parameter call the runner directly.
    pub async fn run<T, F>(&self, tenant: &TenantId, work: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&sightline_storage::Deadline) -> Result<T, ApiError> + Send + 'static,
    {
        self.runner
            .run(tenant, self.runner.timeout(None), work)
            .await
    }
}

impl std::ops::Deref for AppState {
    type Target = Arc<Ingest>;

    fn deref(&self) -> &Self::Target {
        &self.ingest
    }
}

impl From<Arc<Ingest>> for AppState {
    fn from(ingest: Arc<Ingest>) -> Self {
        Self::new(ingest, HttpSettings::default())
    }
}

/// The tenant of a request, from its `Authorization: Bearer` token (auth on) or its
/// `X-Scope-OrgID` header (auth off); see [`crate::auth`]. Every query and ingest route takes
/// it before touching the store, so no request reads or writes another tenant's data. A
/// missing or unknown token is 401, an invalid tenant id 400, on every route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tenant(pub TenantId);

impl FromRequestParts<AppState> for Tenant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, st: &AppState) -> Result<Self, ApiError> {
        request_tenant(st, &parts.headers).map(Tenant)
    }
}

/// The tenant of a request with these headers (what [`Tenant`] extracts).
pub fn request_tenant(
    st: &AppState,
    headers: &axum::http::HeaderMap,
) -> Result<TenantId, ApiError> {
    st.ingest
        .tenant(
            headers.get("authorization").map(|v| v.as_bytes()),
            headers.get("x-scope-orgid").map(|v| v.as_bytes()),
        )
        .map_err(ApiError::from)
}
