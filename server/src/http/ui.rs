//! The built-in web UI: `GET /` answers `index.html` and `GET /ui/{path}` the UI's other files,
//! all compiled into the binary from the repository's `ui/` folder (plain ES modules, HTML and
//! CSS; no build step, nothing fetched from elsewhere at run time). The UI addresses its files
//! and the JSON APIs with relative URLs and keeps its state in the URL's fragment, so it works
//! unchanged under any path prefix a reverse proxy puts in front of the server.
//!
//! The pages are public (they hold no data); every request they make goes through the JSON
//! APIs with the same auth as any client (a bearer token the user types, kept in the browser
//! tab's session storage, or a tenant picked when auth is off). Answers carry a strict
//! Content-Security-Policy: scripts, styles and requests only to this origin.

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::AppState;

include!(concat!(env!("OUT_DIR"), "/ui_assets.rs"));

/// Content-Security-Policy of every UI answer.
const CSP: &str = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
                   frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The routes of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(index))
        .route("/ui/{*path}", get(asset))
}

/// The file at `path` under `ui/`, if the binary holds one.
pub fn file(path: &str) -> Option<&'static [u8]> {
    UI_ASSETS
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, bytes)| *bytes)
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

fn serve(path: &str) -> Response {
    let Some(bytes) = file(path) else {
        return (StatusCode::NOT_FOUND, "no such file in the web UI\n").into_response();
    };
    let mut res = bytes.into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(path)),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // The files change with the binary: revalidate rather than cache across upgrades.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}

async fn index() -> Response {
    serve("index.html")
}

async fn asset(Path(path): Path<String>) -> Response {
    serve(&path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ui_is_embedded_with_its_entry_point() {
        let index = file("index.html").unwrap_or_else(|| panic!("ui/index.html is not embedded"));
        let text = String::from_utf8_lossy(index);
        assert!(text.contains("ui/app.js"), "index.html loads ui/app.js");
        assert!(file("app.js").is_some());
        assert!(file("../Cargo.toml").is_none());
        assert_eq!(
            content_type("views/trace.js"),
            "text/javascript; charset=utf-8"
        );
    }
}
