//! The detector API end to end through the real `sightline` binary: a seasonal metric with an
//! injected level shift is ingested over OTLP/HTTP JSON, detectors are created, trained and
//! scored in the background, and the results are read back as anomaly events, PromQL series
//! and Grafana annotations, across a restart, per tenant. The scheduler's off switch and
//! scoring ticks are in [`scheduling`], the limits on what detectors may ask of the server in
//! [`limits`].

mod limits;
mod scheduling;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::{ServerProcess, http};
use serde_json::{Value, json};

const STEP_S: i64 = 60;
const N: usize = 1200;
const SEASON: usize = 60;
/// The level shift covers points SHIFT_START..SHIFT_END.
const SHIFT_START: usize = 1100;
const SHIFT_END: usize = 1130;

fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    tenant: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let r = http(
        addr,
        method,
        path,
        &[
            ("content-type", "application/json"),
            ("x-scope-orgid", tenant),
        ],
        &bytes,
    )
    .unwrap();
    let v = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
    (r.status, v)
}

/// A config file holding `limits` (TOML lines of the `[limits]` table) in `dir`.
fn limits_config(dir: &Path, limits: &str) -> PathBuf {
    let path = dir.join("sightline.toml");
    std::fs::write(&path, format!("[limits]\n{limits}\n")).unwrap();
    path
}

/// Deterministic noise in [-1, 1].
fn noise(i: usize, salt: u64) -> f64 {
    let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt;
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    (x % 20_001) as f64 / 10_000.0 - 1.0
}

fn seasonal(i: usize, level: f64, salt: u64) -> f64 {
    level + 0.3 * (i as f64 / SEASON as f64 * std::f64::consts::TAU).sin() + 0.02 * noise(i, salt)
}

/// Start of the data (s): the last point is one step before the current minute.
fn data_start_s() -> i64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    now / STEP_S * STEP_S - N as i64 * STEP_S
}

fn gauge(name: &str, start_s: i64, values: &[f64]) -> Value {
    let points: Vec<Value> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            json!({"timeUnixNano": ((start_s + i as i64 * STEP_S) * 1_000_000_000).to_string(), "asDouble": v})
        })
        .collect();
    json!({"name": name, "gauge": {"dataPoints": points}})
}

fn ingest(addr: SocketAddr, tenant: &str, metrics: Vec<Value>) {
    let body = json!({"resourceMetrics": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "chat"}}]},
        "scopeMetrics": [{"metrics": metrics}]
    }]});
    let (status, r) = call(addr, "POST", "/v1/metrics", tenant, Some(&body));
    assert_eq!(status, 200, "{r}");
}

fn ingest_dataset(addr: SocketAddr, tenant: &str) -> i64 {
    let start_s = data_start_s();
    let p50: Vec<f64> = (0..N)
        .map(|i| {
            let shift = if (SHIFT_START..SHIFT_END).contains(&i) {
                0.6
            } else {
                0.0
            };
            seasonal(i, 1.0, 1) + shift
        })
        .collect();
    let p99: Vec<f64> = (0..N).map(|i| seasonal(i, 3.0, 2)).collect();
    let short: Vec<f64> = (0..20).map(|i| seasonal(i, 1.0, 3)).collect();
    // A constant series with a 15-minute hole (longer than PromQL's 5-minute lookback).
    let flat: Vec<Value> = (0..N)
        .filter(|i| !(600..615).contains(i))
        .map(|i| json!({"timeUnixNano": ((start_s + i as i64 * STEP_S) * 1_000_000_000).to_string(), "asDouble": 2.0}))
        .collect();
    // Two series of one metric (a `model` attribute), for one model per series.
    let per_model: Vec<Value> = ["a", "b"]
        .iter()
        .enumerate()
        .flat_map(|(k, m)| {
            (0..300).map(move |i| {
                json!({"timeUnixNano": ((start_s + (N as i64 - 300 + i as i64) * STEP_S) * 1_000_000_000).to_string(),
                       "asDouble": seasonal(i, 10.0 * (k + 1) as f64, 4 + k as u64),
                       "attributes": [{"key": "model", "value": {"stringValue": m}}]})
            })
        })
        .collect();
    ingest(
        addr,
        tenant,
        vec![
            gauge("chat_latency_p50", start_s, &p50),
            gauge("chat_latency_p99", start_s, &p99),
            gauge("short_metric", start_s + (N as i64 - 20) * STEP_S, &short),
            json!({"name": "tokens_rate", "gauge": {"dataPoints": per_model}}),
            json!({"name": "flat_metric", "gauge": {"dataPoints": flat}}),
        ],
    );
    start_s
}

/// Poll a detector until `done` holds (or fail after `secs`).
fn wait_for(
    addr: SocketAddr,
    tenant: &str,
    name: &str,
    secs: u64,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let (status, d) = call(
            addr,
            "GET",
            &format!("/api/v1/detectors/{name}"),
            tenant,
            None,
        );
        assert_eq!(status, 200, "{d}");
        if done(&d) {
            return d;
        }
        assert!(Instant::now() < deadline, "detector {name} not done: {d}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn ready(d: &Value) -> bool {
    d["status"]["state"] == "ready" && d["status"]["last_trained_ms"].is_i64()
}

fn range(addr: SocketAddr, tenant: &str, query: &str, start_s: i64, end_s: i64) -> Vec<Value> {
    range_step(addr, tenant, query, start_s, end_s, STEP_S)
}

fn range_step(
    addr: SocketAddr,
    tenant: &str,
    query: &str,
    start_s: i64,
    end_s: i64,
    step_s: i64,
) -> Vec<Value> {
    let path = format!(
        "/api/v1/query_range?query={}&start={start_s}&end={end_s}&step={step_s}",
        form_urlencoded::byte_serialize(query.as_bytes()).collect::<String>()
    );
    let (status, v) = call(addr, "GET", &path, tenant, None);
    assert_eq!(status, 200, "{v}");
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

fn values(series: &Value) -> Vec<(i64, f64)> {
    series["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p[0].as_f64().unwrap() as i64,
                p[1].as_str().unwrap().parse::<f64>().unwrap(),
            )
        })
        .collect()
}

fn anomalies(addr: SocketAddr, tenant: &str, detector: &str) -> Vec<Value> {
    let (status, v) = call(
        addr,
        "GET",
        &format!("/api/v1/anomalies?detector={detector}"),
        tenant,
        None,
    );
    assert_eq!(status, 200, "{v}");
    v["anomalies"].as_array().cloned().unwrap()
}

/// Every event overlaps the injected window (with a little slack) and one covers it.
fn check_events(events: &[Value], start_s: i64, detector: &str, strict: bool) {
    let shift_from = (start_s + SHIFT_START as i64 * STEP_S) * 1000;
    let shift_to = (start_s + SHIFT_END as i64 * STEP_S) * 1000;
    let slack = 10 * STEP_S * 1000;
    assert!(!events.is_empty(), "{detector}: no anomaly event");
    let covering = events.iter().filter(|e| {
        let s = e["start_ms"].as_i64().unwrap();
        let end = e["end_ms"].as_i64().unwrap_or(i64::MAX);
        s <= shift_from + slack && end >= shift_from && s >= shift_from - slack
    });
    assert!(
        covering.count() >= 1,
        "{detector}: no event at the shift: {events:?}"
    );
    for e in events {
        assert_eq!(e["detector"], detector);
        let sev = e["severity"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&sev), "{e}");
        assert!(["low", "medium", "high"].contains(&e["level"].as_str().unwrap()));
        assert_eq!(e["direction"], "above", "{e}");
        assert!(
            e["explanation"]
                .as_str()
                .unwrap()
                .contains("above expected"),
            "{e}"
        );
        if strict {
            let s = e["start_ms"].as_i64().unwrap();
            assert!(
                s >= shift_from - slack && s <= shift_to + slack,
                "{detector}: event far from the shift: {e}"
            );
        }
    }
}

fn seasonal_spec() -> Value {
    json!({
        "name": "lat_sn", "query": "chat_latency_p50", "step": "60s", "history": "1d",
        "model": {"kind": "seasonal_naive", "season": SEASON, "window": 30},
        "direction": "above", "sustain": {"window": 5, "min_points": 3, "recovery": 3}
    })
}

fn nbeats_spec(name: &str, epochs: usize, width: usize) -> Value {
    // patience 0: no early stopping, so the big model trains long enough to be observed.
    let patience = if epochs > 1000 { 0 } else { 4 };
    json!({
        "name": name, "query": "chat_latency_p50", "step": "60s", "history": "1d",
        "horizon": 6, "lookback": 24,
        "model": {"kind": "nbeats", "epochs": epochs, "width": width, "stacks": 1, "layers": 2, "batch_size": 32, "patience": patience},
        "direction": "above", "sustain": {"window": 5, "min_points": 3, "recovery": 3}
    })
}

#[test]
fn detectors_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = ServerProcess::start(&data, &[], dir.path().join("server.log"));
    let a = server.http;
    let start_s = ingest_dataset(a, "a");

    // Bad definitions are refused with a message.
    for (bad, what) in [
        (json!({"name": "x", "query": "rate(up[5m]"}), "PromQL"),
        (json!({"name": "9lives", "query": "up"}), "name"),
        (
            json!({"name": "x", "query": "up", "model": {"kind": "prophet"}}),
            "prophet",
        ),
        (json!({"name": "x", "query": "up", "step": "-60s"}), "step"),
    ] {
        let (status, r) = call(a, "POST", "/api/v1/detectors", "a", Some(&bad));
        assert_eq!(status, 400, "{bad} -> {r}");
        assert!(r["error"].as_str().unwrap().contains(what), "{r}");
    }

    let (status, created) = call(a, "POST", "/api/v1/detectors", "a", Some(&seasonal_spec()));
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["name"], "lat_sn");
    assert_eq!(created["alpha"], 0.01);
    assert!(created["status"]["state"].is_string());
    let (status, _) = call(a, "POST", "/api/v1/detectors", "a", Some(&seasonal_spec()));
    assert_eq!(status, 409);
    // N-BEATS judged against the forecast made two steps before each point
    let mut lat_nb = nbeats_spec("lat_nb", 60, 32);
    lat_nb["model"]["forecast_origin"] = json!(2);
    let (status, r) = call(a, "POST", "/api/v1/detectors", "a", Some(&lat_nb));
    assert_eq!(status, 201, "{r}");
    assert_eq!(r["model"]["forecast_origin"], 2, "{r}");
    // The robust calibration (residuals clipped entering the pool) is selectable.
    let mut robust = seasonal_spec();
    robust["name"] = json!("lat_sn_robust");
    robust["model"]["calibration"] = json!("robust");
    let (status, r) = call(a, "POST", "/api/v1/detectors", "a", Some(&robust));
    assert_eq!(status, 201, "{r}");
    assert_eq!(r["model"]["calibration"], "robust", "{r}");
    let short = json!({"name": "short", "query": "short_metric",
        "model": {"kind": "seasonal_naive", "season": SEASON}});
    let (status, r) = call(a, "POST", "/api/v1/detectors", "a", Some(&short));
    assert_eq!(status, 201, "{r}");
    let service = json!({"name": "chat_svc", "mode": "service", "step": "60s", "history": "1d",
    "model": {"kind": "seasonal_naive", "season": SEASON, "window": 30},
    "sustain": {"window": 5, "min_points": 3, "recovery": 3},
    "roles": {
        "latency_p50": {"query": "chat_latency_p50"},
        "latency_p99": {"query": "chat_latency_p99", "threshold": 5.0}
    }});
    let (status, r) = call(a, "POST", "/api/v1/detectors", "a", Some(&service));
    assert_eq!(status, 201, "{r}");
    for name in ["lat_sn", "lat_sn_robust", "lat_nb", "chat_svc"] {
        let (status, r) = call(
            a,
            "POST",
            &format!("/api/v1/detectors/{name}/run"),
            "a",
            None,
        );
        assert_eq!(status, 202, "{r}");
    }

    let sn = wait_for(a, "a", "lat_sn", 60, ready);
    assert_eq!(sn["status"]["series"], 1, "{sn}");
    assert!(sn["status"]["error"].is_null(), "{sn}");
    assert!(sn["status"]["last_scored_ms"].is_i64(), "{sn}");
    let nb = wait_for(a, "a", "lat_nb", 120, ready);
    assert!(
        nb["status"]["fallback"].is_null(),
        "n-beats fell back: {nb}"
    );
    let short = wait_for(a, "a", "short", 60, |d| d["status"]["state"] == "failed");
    let msg = short["status"]["error"].as_str().unwrap();
    assert!(msg.contains("too few") || msg.contains("need"), "{msg}");
    let svc = wait_for(a, "a", "chat_svc", 60, ready);
    assert_eq!(svc["status"]["series"], 2, "{svc}");

    // One model per series; more series than max_series is a clear failure.
    let multi = json!({"name": "per_model", "query": "tokens_rate", "history": "1d",
        "model": {"kind": "median_mad", "window": 30}});
    let (status, r) = call(a, "POST", "/api/v1/detectors", "a", Some(&multi));
    assert_eq!(status, 201, "{r}");
    let capped = json!({"name": "capped", "query": "tokens_rate", "max_series": 1});
    let (status, r) = call(a, "POST", "/api/v1/detectors", "a", Some(&capped));
    assert_eq!(status, 201, "{r}");
    let multi = wait_for(a, "a", "per_model", 60, ready);
    assert_eq!(multi["status"]["series"], 2, "{multi}");
    let r = range(
        a,
        "a",
        "per_model:predicted",
        start_s,
        start_s + N as i64 * STEP_S,
    );
    let mut models: Vec<&str> = r
        .iter()
        .map(|s| s["metric"]["model"].as_str().unwrap())
        .collect();
    models.sort();
    assert_eq!(models, ["a", "b"]);
    let capped = wait_for(a, "a", "capped", 60, |d| d["status"]["state"] == "failed");
    assert!(
        capped["status"]["error"]
            .as_str()
            .unwrap()
            .contains("over max_series 1"),
        "{capped}"
    );

    // A constant series with a gap: N-BEATS cannot train, the baseline takes over, bands stay
    // finite.
    let mut flat = nbeats_spec("flat", 60, 32);
    flat["query"] = json!("flat_metric");
    let (status, r) = call(a, "POST", "/api/v1/detectors", "a", Some(&flat));
    assert_eq!(status, 201, "{r}");
    let flat = wait_for(a, "a", "flat", 60, ready);
    let fallback = flat["status"]["fallback"].as_str().unwrap_or_default();
    assert!(
        fallback.contains("constant") && fallback.contains("median/MAD"),
        "{flat}"
    );
    for suffix in ["predicted", "lower", "upper", "anomalous", "likelihood"] {
        let r = range(
            a,
            "a",
            &format!("flat:{suffix}"),
            start_s,
            start_s + N as i64 * STEP_S,
        );
        let v = values(&r[0]);
        assert!(
            v.len() > 500 && v.iter().all(|(_, x)| x.is_finite()),
            "flat:{suffix}"
        );
    }

    // Anomaly events at the injected shift, none far from it.
    let sn_events = anomalies(a, "a", "lat_sn");
    eprintln!("lat_sn events: {sn_events:#?}\nlat_nb: {nb:#?}\nshort: {short:#?}");
    check_events(&sn_events, start_s, "lat_sn", true);
    wait_for(a, "a", "lat_sn_robust", 60, ready);
    check_events(
        &anomalies(a, "a", "lat_sn_robust"),
        start_s,
        "lat_sn_robust",
        true,
    );
    check_events(&anomalies(a, "a", "lat_nb"), start_s, "lat_nb", false);
    let svc_events = anomalies(a, "a", "chat_svc");
    eprintln!("chat_svc events: {svc_events:#?}");
    assert!(!svc_events.is_empty(), "service detector: no finding");
    let hidden = svc_events
        .iter()
        .find(|e| e["kind"] == "hidden_degradation")
        .unwrap_or_else(|| panic!("no hidden degradation: {svc_events:?}"));
    let text = hidden["explanation"].as_str().unwrap();
    assert!(
        text.contains("latency_p50")
            && text.contains("above expected")
            && text.contains("latency_p99"),
        "{text}"
    );

    // Written series, queryable through PromQL, finite, anomalous inside the window only.
    let end_s = start_s + N as i64 * STEP_S;
    for name in ["lat_sn", "lat_nb"] {
        for suffix in ["predicted", "lower", "upper"] {
            let r = range(a, "a", &format!("{name}:{suffix}"), start_s, end_s);
            assert_eq!(r.len(), 1, "{name}:{suffix}: {r:?}");
            assert_eq!(r[0]["metric"]["__name__"], format!("{name}:{suffix}"));
            let v = values(&r[0]);
            assert!(v.len() > 500, "{name}:{suffix}: {} points", v.len());
            assert!(v.iter().all(|(_, x)| x.is_finite()));
        }
        let lower = values(&range(a, "a", &format!("{name}:lower"), start_s, end_s)[0]);
        let upper = values(&range(a, "a", &format!("{name}:upper"), start_s, end_s)[0]);
        assert!(lower.iter().zip(&upper).all(|(l, u)| l.1 <= u.1));
        let anom = values(&range(a, "a", &format!("{name}:anomalous"), start_s, end_s)[0]);
        let in_window = |t: i64| {
            let i = ((t - start_s) / STEP_S) as usize;
            (SHIFT_START..SHIFT_END).contains(&i)
        };
        assert!(
            anom.iter().any(|(t, x)| *x == 1.0 && in_window(*t)),
            "{name}: no anomalous=1 in the window"
        );
        // The likelihood score: in [0, 1], unusual (>= 0.5) at the shift.
        let lik = values(&range(a, "a", &format!("{name}:likelihood"), start_s, end_s)[0]);
        assert!(lik.len() > 500, "{name}:likelihood: {} points", lik.len());
        assert!(lik.iter().all(|(_, x)| (0.0..=1.0).contains(x)));
        let near_shift = |t: i64| {
            let i = ((t - start_s) / STEP_S) as usize;
            (SHIFT_START..SHIFT_START + 10).contains(&i)
        };
        assert!(
            lik.iter().any(|(t, x)| *x >= 0.5 && near_shift(*t)),
            "{name}: likelihood below 0.5 at the shift: {:?}",
            lik.iter()
                .filter(|(t, _)| near_shift(*t))
                .collect::<Vec<_>>()
        );
        if name == "lat_sn" {
            assert!(
                anom.iter().all(|(t, x)| *x == 0.0 || {
                    let i = ((t - start_s) / STEP_S) as usize;
                    (SHIFT_START - 5..SHIFT_END + 10).contains(&i)
                }),
                "anomalous=1 far from the window"
            );
        }
    }
    // Service bands carry the role label.
    let r = range(a, "a", "chat_svc:upper", start_s, end_s);
    let mut roles: Vec<&str> = r
        .iter()
        .map(|s| s["metric"]["role"].as_str().unwrap())
        .collect();
    roles.sort();
    assert_eq!(roles, ["latency_p50", "latency_p99"]);

    // Annotations in Grafana's shape.
    let (status, ann) = call(
        a,
        "GET",
        &format!("/api/v1/annotations?detector=lat_sn&start={start_s}&end={end_s}"),
        "a",
        None,
    );
    assert_eq!(status, 200, "{ann}");
    let ann = ann.as_array().unwrap();
    assert_eq!(ann.len(), sn_events.len());
    for x in ann {
        assert!(x["time"].is_i64() && x["timeEnd"].is_i64(), "{x}");
        assert!(x["time"].as_i64() <= x["timeEnd"].as_i64());
        assert!(x["title"].as_str().unwrap().contains("lat_sn"));
        assert!(!x["text"].as_str().unwrap().is_empty());
        assert!(x["tags"].as_array().unwrap().iter().any(|t| t == "lat_sn"));
    }
    let (status, none) = call(
        a,
        "GET",
        &format!(
            "/api/v1/annotations?detector=lat_sn&start={}&end={}",
            start_s - 7200,
            start_s - 3600
        ),
        "a",
        None,
    );
    assert_eq!((status, none.as_array().unwrap().len()), (200, 0));
    let (status, _) = call(a, "GET", "/api/v1/anomalies?start=tomorrow", "a", None);
    assert_eq!(status, 400);

    // Tenant isolation.
    let (status, list) = call(a, "GET", "/api/v1/detectors", "b", None);
    assert_eq!(
        (status, list["detectors"].as_array().unwrap().len()),
        (200, 0)
    );
    assert_eq!(call(a, "GET", "/api/v1/detectors/lat_sn", "b", None).0, 404);
    assert_eq!(
        call(a, "DELETE", "/api/v1/detectors/lat_sn", "b", None).0,
        404
    );
    assert_eq!(
        call(a, "POST", "/api/v1/detectors/lat_sn/run", "b", None).0,
        404
    );
    assert!(anomalies(a, "b", "lat_sn").is_empty());
    assert_eq!(call(a, "GET", "/api/v1/detectors/lat_sn", "a", None).0, 200);

    // Ingest and queries stay served while a bigger model trains; progress is visible.
    let (status, r) = call(
        a,
        "POST",
        "/api/v1/detectors",
        "a",
        Some(&nbeats_spec("lat_big", 20_000, 256)),
    );
    assert_eq!(status, 201, "{r}");
    let training = wait_for(a, "a", "lat_big", 60, |d| {
        d["status"]["state"] == "training" && d["status"]["progress"]["epoch"].as_u64() > Some(0)
    });
    let p = &training["status"]["progress"];
    assert_eq!(p["epochs"], 20_000, "{p}");
    assert_eq!(p["series_total"], 1, "{p}");
    assert!(p["train_loss"].as_f64().unwrap().is_finite(), "{p}");
    for _ in 0..3 {
        let t = Instant::now();
        ingest(
            a,
            "a",
            vec![gauge("during_training", data_start_s(), &[1.0, 2.0, 3.0])],
        );
        let r = range(a, "a", "chat_latency_p50", start_s, end_s);
        assert_eq!(r.len(), 1);
        assert!(
            t.elapsed() < Duration::from_secs(3),
            "ingest + query took {:?} during training",
            t.elapsed()
        );
    }
    let (_, still) = call(a, "GET", "/api/v1/detectors/lat_big", "a", None);
    assert_eq!(
        still["status"]["state"], "training",
        "training ended too early to test: {still}"
    );
    // Deleting stops the training and removes the detector and its events.
    let t = Instant::now();
    assert_eq!(
        call(a, "DELETE", "/api/v1/detectors/lat_big", "a", None).0,
        200
    );
    assert!(t.elapsed() < Duration::from_secs(10));
    assert_eq!(
        call(a, "GET", "/api/v1/detectors/lat_big", "a", None).0,
        404
    );
    assert!(!data.join("detectors/a/lat_big").exists());

    // Restart: detectors and events survive.
    server.stop();
    let server = ServerProcess::start(&data, &[], dir.path().join("server2.log"));
    let a = server.http;
    let (status, list) = call(a, "GET", "/api/v1/detectors", "a", None);
    assert_eq!(status, 200);
    let names: Vec<&str> = list["detectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "capped",
            "chat_svc",
            "flat",
            "lat_nb",
            "lat_sn",
            "lat_sn_robust",
            "per_model",
            "short"
        ]
    );
    let after = anomalies(a, "a", "lat_sn");
    let ids = |v: &[Value]| {
        v.iter()
            .map(|e| e["id"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&after), ids(&sn_events));
    let nb = wait_for(a, "a", "lat_nb", 60, ready);
    assert!(nb["status"]["fallback"].is_null(), "{nb}");
    assert!(
        data.join("detectors/a/lat_nb/models")
            .read_dir()
            .unwrap()
            .next()
            .is_some()
    );

    // PUT replaces; DELETE removes the detector and its events, the written series remain.
    // What GET returns (status included) can be PUT back as it is.
    let (_, mut replaced) = call(a, "GET", "/api/v1/detectors/lat_sn", "a", None);
    assert!(replaced["status"].is_object());
    replaced["alpha"] = json!(0.05);
    let (status, r) = call(a, "PUT", "/api/v1/detectors/lat_sn", "a", Some(&replaced));
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["alpha"], 0.05);
    assert_eq!(
        call(a, "DELETE", "/api/v1/detectors/lat_sn", "a", None).0,
        200
    );
    assert!(anomalies(a, "a", "lat_sn").is_empty());
    assert_eq!(range(a, "a", "lat_sn:predicted", start_s, end_s).len(), 1);
    server.stop();
}

fn cli(addr: SocketAddr, args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sightline"))
        .arg("detectors")
        .args(["--url", &format!("http://{addr}"), "--tenant", "a"])
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn detectors_cli() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(&dir.path().join("data"), &[], dir.path().join("server.log"));
    let a = server.http;
    ingest_dataset(a, "a");
    let file = dir.path().join("spec.json");
    std::fs::write(&file, nbeats_spec("cli_nb", 40, 16).to_string()).unwrap();
    let (ok, out) = cli(a, &["create", "--file", file.to_str().unwrap()]);
    assert!(ok, "{out}");
    assert!(out.contains("cli_nb"), "{out}");
    let (ok, out) = cli(a, &["create", "--file", file.to_str().unwrap()]);
    assert!(!ok && out.contains("409"), "{out}");
    let (ok, out) = cli(a, &["run", "cli_nb", "--wait", "--timeout-secs", "120"]);
    assert!(ok, "{out}");
    assert!(out.contains("ready"), "{out}");
    let (ok, out) = cli(a, &["list"]);
    assert!(
        ok && out.contains("cli_nb") && out.contains("nbeats") && out.contains("ready"),
        "{out}"
    );
    let (ok, out) = cli(a, &["show", "cli_nb", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(ok);
    assert_eq!(v["status"]["series"], 1);
    let (ok, out) = cli(a, &["anomalies", "--detector", "cli_nb"]);
    assert!(ok, "{out}");
    let (ok, out) = cli(a, &["delete", "cli_nb"]);
    assert!(ok && out.contains("deleted"), "{out}");
    let (ok, out) = cli(a, &["show", "cli_nb"]);
    assert!(!ok && out.contains("404"), "{out}");
    server.stop();
}
