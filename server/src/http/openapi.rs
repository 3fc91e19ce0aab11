//! `GET /api/v1/openapi.json`: the OpenAPI 3.1 document of every HTTP endpoint
//! (`server/openapi.json`, compiled in). A test walks it against the router, so a documented
//! path that is not served fails the build's tests.

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

use super::AppState;

/// The document.
pub const OPENAPI_JSON: &str = include_str!("../../openapi.json");

/// The routes of this module.
pub fn routes() -> Router<AppState> {
    Router::new().route("/api/v1/openapi.json", get(openapi))
}

async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI_JSON)
}

#[cfg(test)]
mod tests {
    #[test]
    fn document_is_valid_json_with_paths() {
        let v: serde_json::Value =
            serde_json::from_str(super::OPENAPI_JSON).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v["openapi"], "3.1.0");
        assert!(v["paths"].as_object().is_some_and(|p| p.len() > 20));
    }
}
