//! The detect calculators through the real `sightline` binary: `POST /api/v1/detect/*` and
//! `sightline granger` on a CSV file. Results must equal the library's on the same input.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::common::*;
use serde_json::{Value, json};
use sightline_detect::granger::{GrangerRequest, granger};

/// x drives y with a lag of 2: y[t] = 0.8 x[t-2] + noise (deterministic LCG noise).
fn causal_pair(n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut state = 12345u64;
    let mut rnd = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 11) as f64 / (1u64 << 53) as f64) - 0.5
    };
    let x: Vec<f64> = (0..n).map(|_| rnd()).collect();
    let y: Vec<f64> = (0..n)
        .map(|t| if t >= 2 { 0.8 * x[t - 2] } else { 0.0 } + 0.3 * rnd())
        .collect();
    (x, y)
}

/// JSON equality with floats compared to 1e-9 relative (the request's numbers cross a JSON
/// round trip and a different binary).
fn assert_close(got: &Value, expect: &Value, path: &str) {
    match (got, expect) {
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            assert!(
                (a - b).abs() <= 1e-9 * a.abs().max(b.abs()) || (a - b).abs() < 1e-300,
                "{path}: {a} vs {b}"
            );
        }
        (Value::Array(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{path}: length");
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                assert_close(x, y, &format!("{path}[{i}]"));
            }
        }
        (Value::Object(a), Value::Object(b)) => {
            assert_eq!(
                a.keys().collect::<Vec<_>>(),
                b.keys().collect::<Vec<_>>(),
                "{path}: keys"
            );
            for (k, x) in a {
                assert_close(x, &b[k], &format!("{path}.{k}"));
            }
        }
        (a, b) => assert_eq!(a, b, "{path}"),
    }
}

fn post_json(addr: std::net::SocketAddr, path: &str, body: &Value) -> (u16, Value) {
    let r = http(
        addr,
        "POST",
        path,
        &[("content-type", "application/json")],
        body.to_string().as_bytes(),
    )
    .unwrap();
    let v = serde_json::from_str(&r.text()).unwrap_or(Value::Null);
    (r.status, v)
}

#[test]
fn detect_endpoints_match_the_library() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(&dir.path().join("data"), &[], dir.path().join("server.log"));
    let (x, y) = causal_pair(300);

    // Inline Granger: exactly the library's numbers.
    let (status, got) = post_json(
        server.http,
        "/api/v1/detect/granger",
        &json!({"cause": x, "effect": y, "max_lag": 4}),
    );
    assert_eq!(status, 200, "{got}");
    let expect = granger(&GrangerRequest {
        cause: x.clone(),
        effect: y.clone(),
        max_lag: 4,
        difference: Default::default(),
        alpha: 0.05,
    })
    .unwrap();
    assert_close(
        &got["lags"],
        &serde_json::to_value(&expect.lags).unwrap(),
        "lags",
    );
    assert_eq!(got["lags"].as_array().unwrap().len(), 4);
    assert!(
        got["lags"][1]["ssr_ftest"]["p"].as_f64().unwrap() < 1e-10,
        "x causes y at lag 2"
    );
    for key in ["ssr_ftest", "ssr_chi2test", "lrtest", "params_ftest"] {
        assert!(got["lags"][0][key].is_object(), "{key} missing");
    }
    assert!(got["selected_lag"]["aic"].as_u64().unwrap() >= 2);

    // Degenerate input is a clear 400.
    let (status, err) = post_json(
        server.http,
        "/api/v1/detect/granger",
        &json!({"cause": vec![1.0; 50], "effect": y[..50], "max_lag": 2}),
    );
    assert_eq!(status, 400);
    assert!(
        err["error"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("constant"),
        "{err}"
    );
    let (status, _) = post_json(
        server.http,
        "/api/v1/detect/granger",
        &json!({"cause": [1.0, 2.0], "effect": [1.0]}),
    );
    assert_eq!(status, 400);

    // Entropy: two tokens, one certain, one split evenly between two candidates.
    let lp = json!({"content": [
        {"token": "a", "logprob": 0.0, "top_logprobs": [{"token": "a", "logprob": 0.0}]},
        {"token": "b", "logprob": (0.5f64).ln(), "top_logprobs": [
            {"token": "b", "logprob": (0.5f64).ln()}, {"token": "c", "logprob": (0.5f64).ln()}]}
    ]});
    let (status, got) = post_json(
        server.http,
        "/api/v1/detect/entropy",
        &json!({"logprobs": lp}),
    );
    assert_eq!(status, 200, "{got}");
    let expect = sightline_detect::entropy::response_uncertainty(
        &serde_json::from_value(lp.clone()).unwrap(),
        &Default::default(),
    )
    .unwrap();
    assert_eq!(got, serde_json::to_value(&expect).unwrap());
    let (status, _) = post_json(
        server.http,
        "/api/v1/detect/entropy",
        &json!({"logprobs": {"content": [{"token": "x", "logprob": 3.0}]}}),
    );
    assert_eq!(status, 400, "a positive logprob is refused");

    // Hallucination: an answer with a number the documents do not support scores higher than
    // one they support.
    let docs = json!([{"id": "kb-1", "text": "The Aurora plan costs 49 dollars per month and includes 5 seats."}]);
    let (s1, grounded) = post_json(
        server.http,
        "/api/v1/detect/hallucination",
        &json!({"answer": "The Aurora plan costs 49 dollars per month and includes 5 seats.", "documents": docs}),
    );
    let (s2, made_up) = post_json(
        server.http,
        "/api/v1/detect/hallucination",
        &json!({"answer": "The Aurora plan costs 99 dollars per month and includes 20 seats.", "documents": docs}),
    );
    assert_eq!((s1, s2), (200, 200), "{grounded} {made_up}");
    let score = |v: &Value| {
        v["evaluation"]["gen_ai.evaluation.score.value"]
            .as_f64()
            .unwrap()
    };
    assert!(
        score(&made_up) > score(&grounded),
        "{grounded} vs {made_up}"
    );
    let (status, _) = post_json(
        server.http,
        "/api/v1/detect/hallucination",
        &json!({"documents": []}),
    );
    assert_eq!(status, 400, "missing answer");
    server.stop();
}

#[test]
fn granger_over_stored_metrics_via_promql() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(&dir.path().join("data"), &[], dir.path().join("server.log"));
    let (x, y) = causal_pair(120);
    let now_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        / 60
        * 60;
    let start_s = now_s - 200 * 60;
    let points = |v: &[f64]| -> Vec<Value> {
        v.iter()
            .enumerate()
            .map(|(i, val)| json!({"timeUnixNano": ((start_s + i as u64 * 60) * 1_000_000_000).to_string(), "asDouble": val}))
            .collect()
    };
    let body = json!({"resourceMetrics": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "chat"}}]},
        "scopeMetrics": [{"metrics": [
            {"name": "answer_quality", "gauge": {"dataPoints": points(&x)}},
            {"name": "conversion_rate", "gauge": {"dataPoints": points(&y)}}
        ]}]
    }]});
    let (status, r) = post_json(server.http, "/v1/metrics", &body);
    assert_eq!(status, 200, "{r}");
    let req = json!({
        "cause_query": "answer_quality", "effect_query": "conversion_rate",
        "start": start_s, "end": start_s + 119 * 60, "step": 60, "max_lag": 3
    });
    let (status, got) = post_json(server.http, "/api/v1/detect/granger", &req);
    assert_eq!(status, 200, "{got}");
    let expect = granger(&GrangerRequest {
        cause: x,
        effect: y,
        max_lag: 3,
        difference: Default::default(),
        alpha: 0.05,
    })
    .unwrap();
    assert_close(
        &got["lags"],
        &serde_json::to_value(&expect.lags).unwrap(),
        "lags",
    );
    // A query matching nothing, or two series, is explained.
    let (status, err) = post_json(
        server.http,
        "/api/v1/detect/granger",
        &json!({
        "cause_query": "nope", "effect_query": "conversion_rate", "start": start_s, "end": start_s + 600, "step": 60, "max_lag": 1}),
    );
    assert_eq!(status, 400);
    assert!(
        err["error"]
            .as_str()
            .unwrap()
            .contains("exactly one series"),
        "{err}"
    );
    server.stop();
}

#[test]
fn granger_cli_on_csv() {
    let dir = tempfile::tempdir().unwrap();
    let (x, y) = causal_pair(200);
    let mut csv = String::from("time,quality,conversion\n");
    for (i, (a, b)) in x.iter().zip(&y).enumerate() {
        csv.push_str(&format!("{i},{a},{b}\n"));
    }
    let path = dir.path().join("kpi.csv");
    std::fs::write(&path, csv).unwrap();
    let run = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_sightline"))
            .args(["granger", "--csv"])
            .arg(&path)
            .args([
                "--cause",
                "quality",
                "--effect",
                "conversion",
                "--max-lag",
                "3",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("selected lag: AIC"), "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            .count(),
        3,
        "{text}"
    );
    let out = run(&["--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let expect = granger(&GrangerRequest {
        cause: x,
        effect: y,
        max_lag: 3,
        difference: Default::default(),
        alpha: 0.05,
    })
    .unwrap();
    assert_close(
        &v["lags"],
        &serde_json::to_value(&expect.lags).unwrap(),
        "lags",
    );
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_sightline"))
        .args(["granger", "--csv"])
        .arg(&path)
        .args(["--cause", "nope", "--effect", "conversion"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no column \"nope\""));
}
