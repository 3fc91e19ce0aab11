//! Every path and method in the OpenAPI document is served by the real binary (answers
//! something other than the router's bare 404 or a 405; a handler's own 404, such as "trace not
//! found", carries a body), and the document is served as JSON.

use crate::common::*;
use serde_json::Value;

/// A plausible value for a path parameter.
fn fill(path: &str) -> String {
    path.replace("{name}", "job")
        .replace("{tag}", "service.name")
        .replace("{trace_id}", "0123456789abcdef0123456789abcdef")
        .replace("{id}", "0123456789abcdef0123456789abcdef")
        .replace("{path}", "app.js")
}

#[test]
fn every_documented_endpoint_is_served() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(&tmp.path().join("data"), &[], tmp.path().join("s.log"));
    let r = http(server.http, "GET", "/api/v1/openapi.json", &[], b"").unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let doc: Value = serde_json::from_slice(&r.body).unwrap();
    let paths = doc["paths"].as_object().unwrap();
    let mut checked = 0;
    for (path, ops) in paths {
        assert!(!path.contains(':'), "{path}: use {{param}} syntax");
        for (method, op) in ops.as_object().unwrap() {
            assert!(op["summary"].is_string(), "{method} {path} has no summary");
            let url = fill(path);
            assert!(!url.contains('{'), "{path}: unknown path parameter");
            let r = http(server.http, &method.to_uppercase(), &url, &[], b"").unwrap();
            assert!(
                r.status != 405 && !(r.status == 404 && r.body.is_empty()),
                "{} {url} answered {}: {}",
                method.to_uppercase(),
                r.status,
                r.text()
            );
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} operations documented");
    server.stop();
}
