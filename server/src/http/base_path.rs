//! Serving under a path prefix (`http.base_path`, `--http-base-path`), for reverse proxies that
//! pass the public path through unchanged (`https://example.com/sightline/...` to
//! `http://sightline:4318/sightline/...`).
//!
//! With a base path `/b`, every route answers under it (`/b/`, `/b/api/v1/...`, `/b/v1/traces`):
//! the prefix is stripped before routing, `/b` redirects to `/b/` (the web UI uses relative
//! URLs, so its page URL must end in `/`), and a path outside `/b` answers 404. A proxy that
//! strips the prefix itself needs no base path.

use axum::extract::{Request, State};
use axum::http::{StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{ApiError, ErrorKind};
use crate::config::BasePath;

/// What a request path means under `base`.
#[derive(Debug, PartialEq, Eq)]
enum Under<'a> {
    /// Inside it: the path to route.
    Inside(&'a str),
    /// The base itself, without its trailing slash.
    Base,
    /// Outside it.
    Outside,
}

fn locate<'a>(base: &BasePath, path: &'a str) -> Under<'a> {
    match path.strip_prefix(base.as_str()) {
        Some("") => Under::Base,
        Some(rest) if rest.starts_with('/') => Under::Inside(rest),
        _ => Under::Outside,
    }
}

/// Middleware: strips `base` from the request path before the routes see it (see the module
/// docs).
pub async fn strip(State(base): State<BasePath>, mut req: Request, next: Next) -> Response {
    let uri = req.uri().clone();
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    let path = match locate(&base, uri.path()) {
        Under::Inside(p) => p.to_owned(),
        Under::Base => {
            let to = format!("{}/{query}", base.as_str());
            return (StatusCode::PERMANENT_REDIRECT, [(header::LOCATION, to)]).into_response();
        }
        Under::Outside => {
            return ApiError::new(
                ErrorKind::NotFound,
                format!("not found: this server answers under {}/", base.as_str()),
            )
            .into_response();
        }
    };
    let mut parts = uri.into_parts();
    parts.path_and_query = match format!("{path}{query}").parse() {
        Ok(pq) => Some(pq),
        Err(e) => return ApiError::bad_data(format!("invalid path: {e}")).into_response(),
    };
    match Uri::from_parts(parts) {
        Ok(u) => *req.uri_mut() = u,
        Err(e) => return ApiError::bad_data(format!("invalid path: {e}")).into_response(),
    }
    next.run(req).await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn locates() {
        let b = BasePath::parse("/obs/sightline/").unwrap();
        assert_eq!(locate(&b, "/obs/sightline/"), Under::Inside("/"));
        assert_eq!(
            locate(&b, "/obs/sightline/api/v1/query"),
            Under::Inside("/api/v1/query")
        );
        assert_eq!(locate(&b, "/obs/sightline"), Under::Base);
        assert_eq!(locate(&b, "/obs/sightlinex/"), Under::Outside);
        assert_eq!(locate(&b, "/api/v1/query"), Under::Outside);
    }
}
