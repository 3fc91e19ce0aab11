//! The detector scheduler through the real binary: it can be turned off, and between training
//! runs scoring runs pick up new points at every step, writing each step once.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::{
    call, ingest, limits_config, range_step, ready, seasonal, seasonal_spec, values, wait_for,
};
use crate::common::ServerProcess;

#[test]
fn scheduler_can_be_disabled() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(
        &dir.path().join("data"),
        &["--detector-threads", "0"],
        dir.path().join("server.log"),
    );
    let a = server.http;
    let (status, r) = call(a, "POST", "/api/v1/detectors", "a", Some(&seasonal_spec()));
    assert_eq!(status, 201, "{r}");
    let (status, r) = call(a, "POST", "/api/v1/detectors/lat_sn/run", "a", None);
    assert_eq!(status, 503, "{r}");
    std::thread::sleep(Duration::from_millis(600));
    let (_, d) = call(a, "GET", "/api/v1/detectors/lat_sn", "a", None);
    assert_eq!(d["status"]["state"], "pending");
    server.stop();
}

#[test]
fn scoring_ticks_follow_new_points() {
    let dir = tempfile::tempdir().unwrap();
    // a 2 s step, below the default shortest step
    let config = limits_config(dir.path(), "min_detector_step_secs = 1");
    let server = ServerProcess::start(
        &dir.path().join("data"),
        &["--config", config.to_str().unwrap()],
        dir.path().join("server.log"),
    );
    let a = server.http;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
        / 2
        * 2;
    let points = |from: i64, n: i64| -> Vec<Value> {
        (0..n)
            .map(|k| {
                let t = from + 2 * k;
                json!({"timeUnixNano": (t * 1_000_000_000).to_string(), "asDouble": seasonal(t as usize / 2, 5.0, 9)})
            })
            .collect()
    };
    ingest(
        a,
        "a",
        vec![json!({"name": "fast_metric", "gauge": {"dataPoints": points(now - 600, 300)}})],
    );
    let spec = json!({"name": "fast", "query": "fast_metric", "step": "2s", "history": "10m",
        "model": {"kind": "median_mad", "window": 30}});
    let (status, r) = call(a, "POST", "/api/v1/detectors", "a", Some(&spec));
    assert_eq!(status, 201, "{r}");
    let first = wait_for(a, "a", "fast", 60, ready);
    let trained = first["status"]["last_trained_ms"].as_i64().unwrap();
    let scored = first["status"]["last_scored_ms"].as_i64().unwrap();
    // New points arrive over the next seconds; scoring runs (not retraining) pick them up.
    ingest(
        a,
        "a",
        vec![json!({"name": "fast_metric", "gauge": {"dataPoints": points(now, 8)}})],
    );
    // At least three more steps, and past the last new point (`now + 14 s`), so that every
    // new point has been in a scored window.
    let past_new = (now + 16) * 1000;
    let later = wait_for(a, "a", "fast", 40, |d| {
        d["status"]["last_scored_ms"].as_i64().unwrap_or(0) >= (scored + 6000).max(past_new)
    });
    assert_eq!(
        later["status"]["last_trained_ms"].as_i64(),
        Some(trained),
        "{later}"
    );
    let end = later["status"]["last_scored_ms"].as_i64().unwrap() / 1000;
    let r = range_step(a, "a", "fast:predicted", now - 540, end, 2);
    let v = values(&r[0]);
    assert!(v.last().unwrap().0 >= scored / 1000 + 6, "{v:?}");
    // Every step written once: strictly increasing timestamps, no gaps in the scored stretch.
    assert!(v.windows(2).all(|w| w[1].0 - w[0].0 == 2), "{v:?}");
    // The scoring runs carry the range of every value seen since the full run (the whole
    // history), so the likelihood of a short window judges records against all of it.
    let state: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("data/detectors/a/fast/state.json")).unwrap(),
    )
    .unwrap();
    let ranges = state["ranges"].as_object().expect("ranges in state.json");
    assert_eq!(ranges.len(), 1, "{state}");
    let r = ranges.values().next().unwrap();
    let (lo, hi) = (r["lo"].as_f64().unwrap(), r["hi"].as_f64().unwrap());
    let value = |k: usize| seasonal((now - 600) as usize / 2 + k, 5.0, 9);
    let bounds = |ks: std::ops::Range<usize>| {
        ks.map(value)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
                (l.min(v), h.max(v))
            })
    };
    // within what was ingested, and holding every point of the last 200 (surely in the
    // windows, the 8 new ones included)
    let (all_lo, all_hi) = bounds(0..308);
    let (recent_lo, recent_hi) = bounds(108..308);
    assert!(
        all_lo <= lo && lo <= recent_lo && recent_hi <= hi && hi <= all_hi,
        "carried range {lo}..{hi}; ingested {all_lo}..{all_hi}, last 200 {recent_lo}..{recent_hi}"
    );
    server.stop();
}
