//! Protections against requests a browser can be made to send on a user's behalf.
//!
//! * **DNS rebinding.** With auth off on a loopback listener, any page the user visits could
//!   resolve its own name to 127.0.0.1 and talk to the server. Such requests carry the page's
//!   name in `Host`, so a `Host` that is not loopback (`localhost`, `*.localhost`, a loopback
//!   address) or listed in `http.allowed_hosts` is refused with 403.
//! * **Cross-site requests.** A page can POST a form or `text/plain` to any address without
//!   asking. With auth off (the only case where such a request needs no credentials a browser
//!   would not add by itself), requests that change state (POST, PUT, PATCH, DELETE) whose
//!   `Origin` is neither the server's own (same host and port as `Host`) nor listed in
//!   `http.cors_allowed_origins` are refused with 403. Routes whose body is JSON refuse other
//!   content types with 415 ([`require_json`]) whatever the auth, which a page cannot send
//!   without a CORS preflight.
//! * **CORS** headers are sent only for the configured origins; none by default.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, ErrorKind};
use super::state::AppState;

/// Listener-level settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpSettings {
    /// Refuse `Host` names that are not loopback or in `allowed_hosts` (on when auth is off and
    /// the listener is on a loopback address).
    pub check_host: bool,
    /// Refuse state-changing requests from foreign origins (on when auth is off).
    pub check_origin: bool,
    /// Host names (without port) answered besides loopback ones when `check_host` is on.
    pub allowed_hosts: Vec<String>,
    /// Origins (`scheme://host[:port]`) allowed to call the API from a browser page on
    /// another origin; CORS headers are sent for them only.
    pub cors_allowed_origins: Vec<String>,
    /// The path prefix every route answers under (root by default).
    pub base_path: crate::config::BasePath,
}

/// The host part of a `Host` header value (`[::1]:80` -> `::1`, `a.b:80` -> `a.b`).
fn host_name(value: &str) -> &str {
    let v = value.trim();
    if let Some(rest) = v.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    match v.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => v,
    }
}

/// Whether `host` (no port) names this machine's loopback interface.
fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    if h == "localhost" || h.ends_with(".localhost") {
        return true;
    }
    h.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

fn forbidden(msg: impl Into<String>) -> Response {
    ApiError::new(ErrorKind::Forbidden, msg).into_response()
}

/// Whether `origin` is the server's own origin for a request with these headers.
fn same_origin(origin: &str, headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .unwrap_or("");
    !authority.is_empty() && authority.eq_ignore_ascii_case(host.trim())
}

/// Middleware enforcing the `Host` and `Origin` rules of the module docs.
pub async fn browser_guard(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let settings = &st.http;
    let headers = req.headers();
    if settings.check_host {
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .map(host_name)
            // HTTP/2 carries the authority in the URI instead.
            .or_else(|| req.uri().host())
            .unwrap_or("");
        let allowed = is_loopback_host(host)
            || settings
                .allowed_hosts
                .iter()
                .any(|h| h.eq_ignore_ascii_case(host));
        if !allowed {
            return forbidden(format!(
                "host {host:?} is not answered: this server listens on loopback without auth, \
                 so only loopback names are (add the name to http.allowed_hosts to allow it)"
            ));
        }
    }
    let changes_state = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if settings.check_origin
        && changes_state
        && let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok())
        && !same_origin(origin, headers)
        && !settings.cors_allowed_origins.iter().any(|o| o == origin)
    {
        return forbidden(format!(
            "cross-origin request from {origin:?} refused (allow it with http.cors_allowed_origins)"
        ));
    }
    next.run(req).await
}

/// The CORS layer for the configured origins, or none.
pub fn cors_layer(settings: &HttpSettings) -> Option<tower_http::cors::CorsLayer> {
    if settings.cors_allowed_origins.is_empty() {
        return None;
    }
    let origins: Vec<_> = settings
        .cors_allowed_origins
        .iter()
        .filter_map(|o| axum::http::HeaderValue::from_str(o).ok())
        .collect();
    Some(
        tower_http::cors::CorsLayer::new()
            .allow_origin(origins)
            .allow_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                header::HeaderName::from_static("x-scope-orgid"),
            ]),
    )
}

/// Route middleware for JSON-bodied routes: a request with a body must say
/// `Content-Type: application/json` (415 otherwise).
pub async fn require_json(req: Request, next: Next) -> Response {
    let has_body = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| v.trim() != "0");
    let is_json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"));
    let body_method = matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH);
    if body_method && has_body && !is_json {
        return ApiError::new(
            ErrorKind::UnsupportedMediaType,
            "this endpoint takes a JSON body: send Content-Type: application/json",
        )
        .into_response();
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names() {
        assert_eq!(host_name("localhost:4318"), "localhost");
        assert_eq!(host_name("[::1]:4318"), "::1");
        assert_eq!(host_name("example.com"), "example.com");
        assert!(is_loopback_host("localhost"));
        assert!(is_loopback_host("app.localhost"));
        assert!(is_loopback_host("127.0.0.2"));
        assert!(is_loopback_host("::1"));
        assert!(!is_loopback_host("evil.example"));
        assert!(!is_loopback_host("localhost.evil.example"));
        assert!(!is_loopback_host("10.0.0.1"));
    }

    #[test]
    fn origins() {
        let mut h = HeaderMap::new();
        h.insert(
            header::HOST,
            "127.0.0.1:4318".parse().unwrap_or_else(|e| panic!("{e}")),
        );
        assert!(same_origin("http://127.0.0.1:4318", &h));
        assert!(!same_origin("http://127.0.0.1:9999", &h));
        assert!(!same_origin("https://evil.example", &h));
        assert!(!same_origin("null", &h));
    }
}
