//! What a tenant's detectors may ask of the server, through the real binary: definitions over a
//! limit are refused with 400 naming it, a tenant's quota, the training budget, and a detector
//! whose run the process did not survive is suspended at the next start instead of crashing it
//! again.

use std::time::Duration;

use serde_json::{Value, json};

use super::{call, ingest_dataset, limits_config, nbeats_spec, ready, seasonal_spec, wait_for};
use crate::common::ServerProcess;

/// `up + up + ...`: a PromQL tree as deep as it has terms.
fn deep_sum(terms: usize) -> String {
    vec!["up"; terms].join(" + ")
}

fn refused(addr: std::net::SocketAddr, tenant: &str, spec: &Value, what: &str) {
    let (status, r) = call(addr, "POST", "/api/v1/detectors", tenant, Some(spec));
    let short = |v: &Value| v.to_string().chars().take(300).collect::<String>();
    assert_eq!(status, 400, "{} -> {}", short(spec), short(&r));
    let msg = r["error"].as_str().unwrap_or_default();
    assert!(msg.contains(what), "{what} not in {}", short(&r["error"]));
}

#[test]
fn deep_queries_are_refused_at_creation() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(
        &dir.path().join("data"),
        &["--detector-threads", "0"],
        dir.path().join("server.log"),
    );
    let a = server.http;
    let deep = deep_sum(2500);
    refused(a, "a", &json!({"name": "deep", "query": deep}), "query");
    refused(
        a,
        "a",
        &json!({"name": "deep", "mode": "service",
                "roles": {"latency_p50": {"query": "up"}, "error_ratio": {"query": deep}}}),
        "roles.error_ratio.query",
    );
    refused(
        a,
        "a",
        &json!({"name": "deep", "query": "up", "volume_query": deep, "min_volume": 1}),
        "volume_query",
    );
    let (status, r) = call(a, "GET", "/api/v1/detectors", "a", None);
    assert_eq!(
        (status, r["detectors"].as_array().map(Vec::len)),
        (200, Some(0))
    );
    server.stop();
}

#[test]
fn definitions_over_a_limit_are_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = limits_config(dir.path(), "max_detectors_per_tenant = 3");
    let server = ServerProcess::start(
        &dir.path().join("data"),
        &[
            "--detector-threads",
            "0",
            "--config",
            config.to_str().unwrap(),
        ],
        dir.path().join("server.log"),
    );
    let a = server.http;
    let nbeats = |model: Value| {
        let mut m = json!({"kind": "nbeats"});
        m.as_object_mut()
            .unwrap()
            .extend(model.as_object().unwrap().clone());
        json!({"name": "big", "query": "up", "model": m})
    };
    // every field within its own bound, ~16 G parameters together
    refused(
        a,
        "a",
        &nbeats(json!({"width": 4096, "stacks": 64, "layers": 16})),
        "limits.max_detector_parameters",
    );
    // under the parameter cap, but 8192 windows of 1024-unit activations per batch
    refused(
        a,
        "a",
        &nbeats(json!({"width": 1024, "layers": 4, "batch_size": 8192})),
        "limits.max_detector_training_bytes",
    );
    refused(
        a,
        "a",
        &json!({"name": "eager", "query": "up", "retrain_every": "1ms"}),
        "limits.min_detector_retrain_secs",
    );
    refused(
        a,
        "a",
        &json!({"name": "eager", "query": "up", "step": "1s", "history": "1h"}),
        "limits.min_detector_step_secs",
    );
    // the same definitions over PUT
    let (status, r) = call(
        a,
        "PUT",
        "/api/v1/detectors/eager",
        "a",
        Some(&json!({"query": "up", "retrain_every": "1s"})),
    );
    assert_eq!(status, 400, "{r}");

    // the quota counts one tenant's detectors
    for i in 0..3 {
        let (status, r) = call(
            a,
            "POST",
            "/api/v1/detectors",
            "a",
            Some(&json!({"name": format!("d{i}"), "query": "up"})),
        );
        assert_eq!(status, 201, "{r}");
    }
    refused(
        a,
        "a",
        &json!({"name": "d3", "query": "up"}),
        "limits.max_detectors_per_tenant",
    );
    let (status, r) = call(
        a,
        "PUT",
        "/api/v1/detectors/d3",
        "a",
        Some(&json!({"query": "up"})),
    );
    assert_eq!(status, 400, "PUT creating past the quota: {r}");
    // replacing one at the quota is fine, and another tenant has its own quota
    let (status, r) = call(
        a,
        "PUT",
        "/api/v1/detectors/d0",
        "a",
        Some(&json!({"query": "up", "step": "5m"})),
    );
    assert_eq!(status, 200, "{r}");
    let (status, r) = call(
        a,
        "POST",
        "/api/v1/detectors",
        "b",
        Some(&json!({"name": "d3", "query": "up"})),
    );
    assert_eq!(status, 201, "{r}");
    let (status, _) = call(a, "DELETE", "/api/v1/detectors/d1", "a", None);
    assert_eq!(status, 200);
    let (status, r) = call(
        a,
        "POST",
        "/api/v1/detectors",
        "a",
        Some(&json!({"name": "d3", "query": "up"})),
    );
    assert_eq!(status, 201, "{r}");
    server.stop();
}

#[test]
fn a_detector_whose_run_crashed_the_server_is_suspended() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = ServerProcess::start(
        &data,
        &["--detector-threads", "0"],
        dir.path().join("server.log"),
    );
    let a = server.http;
    ingest_dataset(a, "a");
    let (status, r) = call(a, "POST", "/api/v1/detectors", "a", Some(&seasonal_spec()));
    assert_eq!(status, 201, "{r}");
    let (http, grpc) = (server.http, server.grpc);
    server.stop();

    // what a crash in the middle of the detector's training leaves behind
    let det_dir = data.join("detectors/a/lat_sn");
    let marker = det_dir.join("run.inprogress");
    std::fs::write(
        &marker,
        json!({"started_ms": 1_764_470_000_000_i64, "training": true}).to_string(),
    )
    .unwrap();

    let server = ServerProcess::start_at(&data, &[], dir.path().join("server2.log"), http, grpc);
    let a = server.http;
    let (status, d) = call(a, "GET", "/api/v1/detectors/lat_sn", "a", None);
    assert_eq!(status, 200, "{d}");
    assert_eq!(d["status"]["state"], "failed", "{d}");
    let error = d["status"]["error"].as_str().unwrap_or_default().to_owned();
    assert!(
        error.contains("may have crashed") && error.contains("training run"),
        "{error}"
    );
    assert!(!marker.exists(), "the marker is handled at start");
    // not scheduled: a dozen ticks later nothing ran and nothing was written
    std::thread::sleep(Duration::from_secs(3));
    let (_, later) = call(a, "GET", "/api/v1/detectors/lat_sn", "a", None);
    assert_eq!(later["status"], d["status"], "{later}");
    let state: Value =
        serde_json::from_slice(&std::fs::read(det_dir.join("state.json")).unwrap()).unwrap();
    assert!(state["last_run_ms"].is_null(), "{state}");
    assert!(state["suspended"].is_string(), "{state}");

    // an explicit run lifts the suspension
    let (status, r) = call(a, "POST", "/api/v1/detectors/lat_sn/run", "a", None);
    assert_eq!(status, 202, "{r}");
    let done = wait_for(a, "a", "lat_sn", 60, ready);
    assert!(done["status"]["error"].is_null(), "{done}");
    assert!(!marker.exists(), "the run removed its marker");
    server.stop();
}

#[test]
fn training_stops_at_the_budget_with_the_best_model_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let config = limits_config(dir.path(), "max_detector_training_secs = 1");
    let server = ServerProcess::start(
        &dir.path().join("data"),
        &["--config", config.to_str().unwrap()],
        dir.path().join("server.log"),
    );
    let a = server.http;
    ingest_dataset(a, "a");
    // 100,000 steps without early stopping would train for minutes
    let (status, r) = call(
        a,
        "POST",
        "/api/v1/detectors",
        "a",
        Some(&nbeats_spec("long", 100_000, 32)),
    );
    assert_eq!(status, 201, "{r}");
    let d = wait_for(a, "a", "long", 90, ready);
    let error = d["status"]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("limits.max_detector_training_secs") && error.contains("best parameters"),
        "{d}"
    );
    // the N-BEATS model it stopped with scores the series (no fallback)
    assert!(d["status"]["fallback"].is_null(), "{d}");
    assert_eq!(d["status"]["series"], 1, "{d}");
    server.stop();
}
