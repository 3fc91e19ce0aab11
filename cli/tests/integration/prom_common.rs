//! Helpers for the Prometheus API and remote-write tests: building and sending remote-write
//! requests, and calling the query API the way Grafana does (GET query strings and POST
//! form bodies).

#![allow(dead_code, clippy::unwrap_used, missing_docs)]

use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use prost::Message as _;
use serde_json::Value;
use sightline_server::prompb::{Label, MetricMetadata, Sample, TimeSeries, WriteRequest};

use super::common::{HttpResponse, http};

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A series for a write request.
pub fn ts(labels: &[(&str, &str)], samples: &[(i64, f64)]) -> TimeSeries {
    TimeSeries {
        labels: labels
            .iter()
            .map(|(n, v)| Label {
                name: (*n).into(),
                value: (*v).into(),
            })
            .collect(),
        samples: samples
            .iter()
            .map(|(t, v)| Sample {
                value: *v,
                timestamp: *t,
            })
            .collect(),
        exemplars: vec![],
        histograms: vec![],
    }
}

/// Metadata of a family (`type` as in `MetricMetadata.MetricType`).
pub fn meta(family: &str, r#type: i32, help: &str, unit: &str) -> MetricMetadata {
    MetricMetadata {
        r#type,
        metric_family_name: family.into(),
        help: help.into(),
        unit: unit.into(),
    }
}

/// A snappy-compressed `WriteRequest`.
pub fn encode(series: Vec<TimeSeries>, metadata: Vec<MetricMetadata>) -> Vec<u8> {
    let req = WriteRequest {
        timeseries: series,
        metadata,
    };
    snap::raw::Encoder::new()
        .compress_vec(&req.encode_to_vec())
        .unwrap()
}

/// POSTs a remote-write body with the headers Prometheus sends (plus `extra`).
pub fn post_write(addr: SocketAddr, body: &[u8], extra: &[(&str, &str)]) -> HttpResponse {
    let mut h = vec![
        ("Content-Type", "application/x-protobuf"),
        ("Content-Encoding", "snappy"),
        ("X-Prometheus-Remote-Write-Version", "0.1.0"),
    ];
    h.extend_from_slice(extra);
    http(addr, "POST", "/api/v1/write", &h, body).unwrap()
}

/// A form-encoded string of `pairs`.
pub fn form(pairs: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

/// GET `path?pairs`, JSON body parsed.
pub fn get_json(
    addr: SocketAddr,
    path: &str,
    pairs: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let url = if pairs.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", form(pairs))
    };
    let r = http(addr, "GET", &url, headers, b"").unwrap();
    let v = serde_json::from_slice(&r.body)
        .unwrap_or_else(|e| panic!("GET {url}: {} is not JSON: {e}", r.text()));
    (r.status, v)
}

/// POST a form body to `path`, JSON body parsed.
pub fn post_json(
    addr: SocketAddr,
    path: &str,
    pairs: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let body = form(pairs);
    let mut h = vec![("Content-Type", "application/x-www-form-urlencoded")];
    h.extend_from_slice(headers);
    let r = http(addr, "POST", path, &h, body.as_bytes()).unwrap();
    let v = serde_json::from_slice(&r.body)
        .unwrap_or_else(|e| panic!("POST {path}: {} is not JSON: {e}", r.text()));
    (r.status, v)
}

/// Seconds (as Prometheus API times are written) of a millisecond timestamp.
pub fn secs(ms: i64) -> String {
    format!("{}", ms as f64 / 1000.0)
}

/// The sorted string array in `v["data"]`.
pub fn data_strings(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v["data"]
        .as_array()
        .unwrap_or_else(|| panic!("data is not an array: {v}"))
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect();
    out.sort();
    out
}

/// `(labels, [(t ms, value)])` of every series of a matrix or vector result.
pub fn points(v: &Value) -> Vec<(Value, Vec<(i64, String)>)> {
    let pt = |p: &Value| {
        let t = (p[0].as_f64().unwrap() * 1000.0).round() as i64;
        (t, p[1].as_str().unwrap().to_owned())
    };
    let mut out: Vec<(Value, Vec<(i64, String)>)> = v["data"]["result"]
        .as_array()
        .unwrap_or_else(|| panic!("no result array: {v}"))
        .iter()
        .map(|s| {
            let pts = if let Some(vals) = s.get("values") {
                vals.as_array().unwrap().iter().map(pt).collect()
            } else {
                vec![pt(&s["value"])]
            };
            (s["metric"].clone(), pts)
        })
        .collect();
    out.sort_by_key(|(m, _)| m.to_string());
    out
}
