//! `POST /api/v1/aggregate` through the real `sightline` binary: spans sent as OTLP/HTTP JSON
//! by two tenants, aggregated by model and time bucket, with the answers computed here from what
//! was sent; another tenant's spans stay invisible; bad plans and missing tokens are refused.

use crate::common::*;
use serde_json::{Value, json};

const T0: i64 = 1_780_272_000_000_000_000; // 2026-06-01T00:00:00Z

/// `n` chat spans: model i % 3, duration (i + 1) ms, every 5th an error, one per second.
/// What was sent: (model, duration ns, error, start ns).
type Sent = (String, i64, bool, i64);

fn spans(n: usize, service: &str) -> (Value, Vec<Sent>) {
    let models = ["gpt-4o", "claude", "llama"];
    let mut rows = Vec::new();
    let spans: Vec<Value> = (0..n)
        .map(|i| {
            let model = models[i % 3];
            let start = T0 + i as i64 * 1_000_000_000;
            let dur = (i as i64 + 1) * 1_000_000;
            let error = i % 5 == 0;
            rows.push((model.to_owned(), dur, error, start));
            json!({
                "traceId": format!("{:032x}", i + 1),
                "spanId": format!("{:016x}", i + 1),
                "name": "chat",
                "kind": 3,
                "startTimeUnixNano": start.to_string(),
                "endTimeUnixNano": (start + dur).to_string(),
                "status": {"code": if error { 2 } else { 1 }},
                "attributes": [
                    {"key": "gen_ai.request.model", "value": {"stringValue": model}},
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                    {"key": "gen_ai.usage.input_tokens", "value": {"intValue": (10 * i).to_string()}},
                    {"key": "user.id", "value": {"stringValue": format!("u{}", i % 4)}}
                ]
            })
        })
        .collect();
    let body = json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}]
    }]});
    (body, rows)
}

fn post(addr: std::net::SocketAddr, path: &str, token: &str, body: &Value) -> (u16, Value) {
    let auth = format!("Bearer {token}");
    let r = http(
        addr,
        "POST",
        path,
        &[
            ("content-type", "application/json"),
            ("authorization", &auth),
        ],
        body.to_string().as_bytes(),
    )
    .unwrap();
    let v = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
    (r.status, v)
}

#[test]
fn aggregates_over_http_match_what_was_sent() {
    let tmp = tempfile::tempdir().unwrap();
    let tokens = tmp.path().join("tokens");
    std::fs::write(&tokens, "tok-a tenant-a\ntok-b tenant-b\n").unwrap();
    let tokens_arg = tokens.to_str().unwrap().to_owned();
    let server = ServerProcess::start(
        &tmp.path().join("data"),
        &["--auth-tokens-file", tokens_arg.as_str()],
        tmp.path().join("server.log"),
    );
    let (body_a, rows) = spans(120, "chat-api");
    let (body_b, _) = spans(50, "other-tenant");
    assert_eq!(post(server.http, "/v1/traces", "tok-a", &body_a).0, 200);
    assert_eq!(post(server.http, "/v1/traces", "tok-b", &body_b).0, 200);

    // Count, p50 and max duration, error ratio and token sum by model per minute, over the
    // first two minutes.
    let plan = json!({
        "signal": "spans",
        "start": (T0 / 1_000_000_000).to_string(),
        "end": "2026-06-01T00:02:00Z",
        "matchers": [{"key": "gen_ai.operation.name", "op": "=", "value": "chat"}],
        "group_by": ["gen_ai.request.model"],
        "bucket": "1m",
        "aggregates": [
            {"func": "count"},
            {"func": {"quantile": 0.5}, "field": "duration"},
            {"func": "max", "field": "duration"},
            {"func": "error_ratio"},
            {"func": "sum", "field": "gen_ai.usage.input_tokens"}
        ]
    });
    let (status, v) = post(server.http, "/api/v1/aggregate", "tok-a", &plan);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["status"], "success");
    let data = &v["data"];
    assert_eq!(
        data["columns"],
        json!([
            "gen_ai.request.model",
            "time",
            "count",
            "quantile(0.5)(duration)",
            "max(duration)",
            "error_ratio",
            "sum(gen_ai.usage.input_tokens)"
        ])
    );
    let got = data["rows"].as_array().unwrap();
    let mut expect = Vec::new();
    for model in ["claude", "gpt-4o", "llama"] {
        for minute in 0..2i64 {
            let b = T0 + minute * 60_000_000_000;
            let sel: Vec<(usize, &Sent)> = rows
                .iter()
                .enumerate()
                .filter(|(_, r)| r.0 == model && r.3 >= b && r.3 < b + 60_000_000_000)
                .collect();
            let mut d: Vec<i64> = sel.iter().map(|(_, r)| r.1).collect();
            d.sort();
            let mid = (d.len() - 1) as f64 / 2.0;
            let p50 = (d[mid.floor() as usize] + d[mid.ceil() as usize]) as f64 / 2.0;
            let errors = sel.iter().filter(|(_, r)| r.2).count() as f64;
            let tokens: usize = sel.iter().map(|(i, _)| 10 * i).sum();
            expect.push(json!([
                model,
                b,
                sel.len(),
                p50,
                d.last().unwrap(),
                errors / sel.len() as f64,
                tokens as f64
            ]));
        }
    }
    assert_eq!(got.len(), expect.len(), "{data}");
    for (g, e) in got.iter().zip(&expect) {
        for k in 0..7 {
            match (g[k].as_f64(), e[k].as_f64()) {
                (Some(a), Some(b)) => {
                    assert!((a - b).abs() < 1e-9 * b.abs().max(1.0), "{g} vs {e}")
                }
                _ => assert_eq!(g[k], e[k], "{g} vs {e}"),
            }
        }
    }
    assert!(data["explain"]["scan"]["rows_returned"].as_u64().unwrap() <= 120);

    // The 3 slowest spans of user u1, newest tenant's data only.
    let top = json!({"signal": "spans", "matchers": [{"key": "user.id", "value": "u1"}],
        "columns": ["duration", "service.name"],
        "order_by": {"by": {"field": "duration"}, "descending": true}, "limit": 3});
    let (status, v) = post(server.http, "/api/v1/aggregate", "tok-a", &top);
    assert_eq!(status, 200, "{v}");
    let durs: Vec<f64> = v["data"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[1].as_f64().unwrap())
        .collect();
    assert_eq!(durs, vec![118e6, 114e6, 110e6]);

    // Tenant isolation: tenant-b sees only its own service.
    let by_service = json!({"signal": "spans", "group_by": ["service.name"],
        "aggregates": [{"func": "count"}]});
    let (_, v) = post(server.http, "/api/v1/aggregate", "tok-b", &by_service);
    assert_eq!(v["data"]["rows"], json!([["other-tenant", 50]]));

    // Errors: unknown field, bad operator, no token, wrong token, malformed JSON.
    let (status, v) = post(
        server.http,
        "/api/v1/aggregate",
        "tok-a",
        &json!({"signal": "spans", "aggregates": [{"func": "sum", "field": "latency"}]}),
    );
    assert_eq!(status, 400);
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("unknown numeric field"),
        "{v}"
    );
    let (status, v) = post(
        server.http,
        "/api/v1/aggregate",
        "tok-a",
        &json!({"signal": "spans", "matchers": [{"key": "a", "op": "<>", "value": "b"}],
                "aggregates": [{"func": "count"}]}),
    );
    assert_eq!(status, 400);
    assert!(v["error"].as_str().unwrap().contains("operator"), "{v}");
    let (status, _) = post(server.http, "/api/v1/aggregate", "nope", &by_service);
    assert_eq!(status, 401);
    let r = http(
        server.http,
        "POST",
        "/api/v1/aggregate",
        &[
            ("authorization", "Bearer tok-a"),
            ("content-type", "application/json"),
        ],
        b"{not json",
    )
    .unwrap();
    assert_eq!(r.status, 400);
    let r = http(
        server.http,
        "GET",
        "/api/v1/aggregate/fields",
        &[("authorization", "Bearer tok-a")],
        b"",
    )
    .unwrap();
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert!(
        v["data"]["spans"]["numeric"]
            .as_array()
            .unwrap()
            .contains(&json!("duration"))
    );
    server.stop();
}

fn cli(args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sightline"))
        .arg("query")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `sightline query aggregate` prints the same table against a running server (--url) and
/// against its data directory once the server is stopped (--data-dir).
#[test]
fn cli_aggregate_over_url_and_data_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let server = ServerProcess::start(&data, &[], tmp.path().join("server.log"));
    let (body, _) = spans(30, "chat-api");
    let r = http(
        server.http,
        "POST",
        "/v1/traces",
        &[
            ("content-type", "application/json"),
            ("x-scope-orgid", "team-a"),
        ],
        body.to_string().as_bytes(),
    )
    .unwrap();
    assert_eq!(r.status, 200);
    let logs = json!({"resourceLogs": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "chat-api"}}]},
        "scopeLogs": [{"logRecords": [
            {"timeUnixNano": T0.to_string(), "severityNumber": 17, "severityText": "ERROR",
             "body": {"stringValue": "upstream timeout calling openai"}, "traceId": format!("{:032x}", 5)},
            {"timeUnixNano": (T0 + 1_000_000_000).to_string(), "severityNumber": 9, "severityText": "INFO",
             "body": {"stringValue": "answered in 12 ms"}}
        ]}]
    }]});
    let r = http(
        server.http,
        "POST",
        "/v1/logs",
        &[
            ("content-type", "application/json"),
            ("x-scope-orgid", "team-a"),
        ],
        logs.to_string().as_bytes(),
    )
    .unwrap();
    assert_eq!(r.status, 200);
    let url = format!("http://{}", server.http);
    let q = [
        "aggregate",
        "--tenant",
        "team-a",
        "--group-by",
        "gen_ai.request.model",
        "--agg",
        "count",
        "--agg",
        "max:duration",
        "--filter",
        "duration>=5ms",
        "--order-by",
        "0",
        "--desc",
    ];
    let (ok, over_http, err) = cli(&[&["--url", url.as_str()][..], &q[..]].concat());
    assert!(ok, "{err}");
    // Spans 4..29 (duration >= 5 ms): claude i % 3 == 1 (4..28: 9, max 29 ms), llama
    // i % 3 == 2 (5..29: 9, max 30 ms), gpt-4o i % 3 == 0 (6..27: 8, max 28 ms); ties by key.
    // Durations read in human units.
    let expect = "gen_ai.request.model  count  max(duration)\n\
                  claude                9      29.0 ms\n\
                  llama                 9      30.0 ms\n\
                  gpt-4o                8      28.0 ms\n\
                  (3 rows)\n";
    assert_eq!(over_http, expect);
    // Another tenant sees nothing; JSON output parses.
    let (ok, other, _) = cli(&[
        "--url",
        url.as_str(),
        "--json",
        "aggregate",
        "--tenant",
        "team-b",
        "--agg",
        "count",
    ]);
    assert!(ok);
    let v: Value = serde_json::from_str(&other).unwrap();
    assert_eq!(v["data"]["rows"], json!([[0]]));
    // While the server runs, the data directory is refused with a clear message.
    let d = data.to_str().unwrap();
    let (ok, _, err) = cli(&["--data-dir", d, "aggregate", "--agg", "count"]);
    assert!(!ok && err.contains("in use by a running server"), "{err}");
    server.stop();
    let (ok, offline, err) = cli(&[&["--data-dir", d][..], &q[..]].concat());
    assert!(ok, "{err}");
    assert_eq!(offline, expect);
    // Trace by id, trace search and log search, offline.
    let id = format!("{:032x}", 7);
    let (ok, out, err) = cli(&["--data-dir", d, "--tenant", "team-a", "trace", id.as_str()]);
    assert!(ok, "{err}");
    assert_eq!(
        out,
        "span    service   start  duration  status  span_id\n\
         * chat  chat-api  +0 ns  7.0 ms    ok      0000000000000007\n\
         trace 00000000000000000000000000000007 (1 spans; * = critical path)\n"
    );
    let (ok, out, err) = cli(&[
        "--data-dir",
        d,
        "--tenant",
        "team-a",
        "traces",
        "--model",
        "llama",
        "--min-duration",
        "25ms",
        "--sort",
        "duration",
    ]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(
        lines[1].starts_with(&format!("{:032x}  2026-06-01T00:00:29.000Z  30.0 ms", 30)),
        "{out}"
    );
    assert!(
        lines[2].starts_with(&format!("{:032x}  2026-06-01T00:00:26.000Z  27.0 ms", 27)),
        "{out}"
    );
    assert_eq!(lines[3], "(2 of 2 traces)");
    let (ok, out, err) = cli(&[
        "--data-dir",
        d,
        "--tenant",
        "team-a",
        "logs",
        "timeout",
        "--start",
        "2026-06-01T00:00:00Z",
        "--end",
        "2026-06-01T01:00:00Z",
    ]);
    assert!(ok, "{err}");
    assert_eq!(
        out,
        "time                      severity  service   body\n\
         2026-06-01T00:00:00.000Z  ERROR     chat-api  upstream timeout calling openai\n\
         (1 of 1 matching lines)\n"
    );
    let (ok, _, err) = cli(&["--data-dir", d, "trace", "xyz"]);
    assert!(!ok && err.contains("not a hex trace id"), "{err}");
    // PromQL goes through the Prometheus API the same way.
    let (ok, out, err) = cli(&["--data-dir", d, "promql", "1+1", "--time", "4"]);
    assert!(ok, "{err}");
    assert_eq!(
        out,
        "time                      value\n1970-01-01T00:00:04.000Z  2\n"
    );
    let (ok, _, err) = cli(&["--data-dir", d, "promql", "sum(", "--time", "4"]);
    assert!(!ok && err.contains("HTTP 400"), "{err}");
    // Bad input: a clear error and a failing exit status.
    let (ok, _, err) = cli(&["--data-dir", d, "aggregate", "--agg", "median"]);
    assert!(!ok && err.contains("cannot parse aggregate"), "{err}");
}

/// Value of an unlabelled sample in a Prometheus text exposition.
fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// A query whose rows would pass the scan memory budget is refused with 422 and a message that
/// says what to do, not answered by growing the process; a narrower one still answers, and the
/// budget is given back after each query (`/metrics`).
#[test]
fn a_query_past_the_scan_memory_budget_is_refused_and_memory_given_back() {
    let tmp = tempfile::tempdir().unwrap();
    let tokens = tmp.path().join("tokens");
    std::fs::write(&tokens, "tok-a tenant-a\n").unwrap();
    let tokens_arg = tokens.to_str().unwrap().to_owned();
    let server = ServerProcess::start(
        &tmp.path().join("data"),
        &[
            "--auth-tokens-file",
            tokens_arg.as_str(),
            "--scan-memory-bytes",
            "1048576",
        ],
        tmp.path().join("server.log"),
    );
    // 40,000 spans with four attributes each: their attribute maps alone pass 1 MiB.
    for _ in 0..8 {
        let (body, _) = spans(5_000, "chat-api");
        assert_eq!(post(server.http, "/v1/traces", "tok-a", &body).0, 200);
    }
    let by_user = |end: &str| {
        json!({
            "signal": "spans",
            "start": (T0 / 1_000_000_000).to_string(),
            "end": end,
            "group_by": ["user.id"],
            "aggregates": [{"func": "count"}]
        })
    };
    let (status, v) = post(
        server.http,
        "/api/v1/aggregate",
        "tok-a",
        &by_user("2026-06-02T00:00:00Z"),
    );
    assert_eq!(status, 422, "{v}");
    let msg = v["error"].as_str().unwrap_or_default();
    assert!(
        msg.contains("scan memory budget of 1048576 bytes")
            && msg.contains("narrow the time range"),
        "{msg}"
    );
    // The first minute: 60 spans per request, 480 in all.
    let (status, v) = post(
        server.http,
        "/api/v1/aggregate",
        "tok-a",
        &by_user("2026-06-01T00:01:00Z"),
    );
    assert_eq!(status, 200, "{v}");
    let total: f64 = v["data"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[1].as_f64().unwrap())
        .sum();
    assert_eq!(total, 480.0, "{v}");
    let m = http(server.http, "GET", "/metrics", &[], b"")
        .unwrap()
        .text();
    assert_eq!(
        metric(&m, "sightline_scan_memory_budget_bytes"),
        Some(1_048_576.0)
    );
    assert_eq!(
        metric(&m, "sightline_scan_memory_bytes"),
        Some(0.0),
        "given back"
    );
}
