//! Attacks on the HTTP and gRPC surfaces of the real binary: each request that once crashed,
//! froze or exhausted the server is sent again, and the server must answer 4xx/503, keep
//! `/health` and ingest responsive, serve other tenants, and start again afterwards (killed
//! with SIGKILL; every acknowledged write is replayed).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common::{HttpResponse, ServerProcess, cap_address_space, http, status_kib};

fn url_encode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn start(dir: &std::path::Path, extra: &[&str]) -> ServerProcess {
    ServerProcess::start(&dir.join("data"), extra, dir.join("server.log"))
}

fn get(s: &ServerProcess, path: &str, headers: &[(&str, &str)]) -> HttpResponse {
    http(s.http, "GET", path, headers, b"").unwrap()
}

fn post(s: &ServerProcess, path: &str, headers: &[(&str, &str)], body: &[u8]) -> HttpResponse {
    http(s.http, "POST", path, headers, body).unwrap()
}

/// A GET with exactly these headers (the common client adds its own `Host`); the status.
fn get_with_host(s: &ServerProcess, path: &str, host: &str) -> u16 {
    let mut c = TcpStream::connect(s.http).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    c.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw);
    text.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

const FORM: (&str, &str) = ("Content-Type", "application/x-www-form-urlencoded");
const JSON: (&str, &str) = ("Content-Type", "application/json");

/// `/health` answers within `within`.
fn assert_healthy(s: &ServerProcess, within: Duration) {
    let t = Instant::now();
    let r = get(s, "/health", &[]);
    assert_eq!(r.status, 200);
    assert!(t.elapsed() < within, "/health took {:?}", t.elapsed());
}

/// A small OTLP/JSON export is accepted.
fn assert_ingests(s: &ServerProcess, tenant: &str) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let body = format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"svc"}}}}]}},"scopeSpans":[{{"spans":[{{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"op","kind":2,"startTimeUnixNano":"{}","endTimeUnixNano":"{}"}}]}}]}}]}}"#,
        now - 1_000_000,
        now
    );
    let r = post(
        s,
        "/v1/traces",
        &[JSON, ("X-Scope-OrgID", tenant)],
        body.as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

/// Kills `s` the hard way after an attack and starts a server on the same data: it comes up,
/// and the span [`assert_ingests`] stored for `tenant` before the kill is there.
fn assert_restarts(s: ServerProcess, dir: &std::path::Path, extra: &[&str], tenant: &str) {
    drop(s);
    let s = start(dir, extra);
    assert_healthy(&s, Duration::from_secs(2));
    let r = get(
        &s,
        "/api/traces/5b8efff798038103d269b633813fc60c",
        &[("X-Scope-OrgID", tenant)],
    );
    assert_eq!(r.status, 200, "the acknowledged span is gone: {}", r.text());
}

#[test]
fn deep_nesting_is_refused_everywhere_and_the_server_stays_up() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), &[]);
    let sum = vec!["1"; 2000].join("+");
    let abs = format!("{}1{}", "abs(".repeat(2000), ")".repeat(2000));
    let parens = format!("{}1{}", "(".repeat(8000), ")".repeat(8000));
    let logql = format!(
        "{}count_over_time({{a=\"b\"}}[1m]){}",
        "sum(".repeat(10_000),
        ")".repeat(10_000)
    );
    let text = format!("{}a{}", "(".repeat(10_000), ")".repeat(10_000));
    let traceql = format!("{{{}span.a=1{}}}", "(".repeat(10_000), ")".repeat(10_000));
    // PromQL in a 4 KB URL, as the attack sent it.
    let r = get(
        &s,
        &format!("/api/v1/query?query={}", url_encode(&sum)),
        &[],
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("limit"), "{}", r.text());
    for (path, q) in [
        ("/api/v1/query", &abs),
        ("/api/v1/query_range", &abs),
        ("/api/v1/format_query", &parens),
        (
            "/api/v1/series",
            &format!("match[]={}", url_encode(&parens)),
        ),
    ] {
        let body = if q.starts_with("match[]") {
            q.clone()
        } else {
            format!("query={}&start=0&end=60&step=15", url_encode(q))
        };
        let r = post(&s, path, &[FORM], body.as_bytes());
        assert_eq!(r.status, 400, "{path}: {}", r.text());
    }
    let r = post(
        &s,
        "/loki/api/v1/query_range",
        &[FORM],
        format!("query={}", url_encode(&logql)).as_bytes(),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    let r = post(
        &s,
        "/api/v1/logs/search",
        &[FORM],
        format!("q={}", url_encode(&text)).as_bytes(),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    let plan = serde_json::json!({
        "signal": "logs", "start": "2026-01-01T00:00:00Z", "end": "2026-01-02T00:00:00Z",
        "text": text, "aggregates": [{"func": "count"}],
    });
    let r = post(
        &s,
        "/api/v1/aggregate",
        &[JSON],
        plan.to_string().as_bytes(),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    let r = get(
        &s,
        &format!("/api/search?q={}", url_encode(&traceql[..4000])),
        &[],
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_healthy(&s, Duration::from_secs(2));
    assert_ingests(&s, "default");
    // Real queries still work.
    let r = get(
        &s,
        &format!("/api/v1/query?query={}", url_encode("1+2")),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("\"3\""), "{}", r.text());
    assert_restarts(s, dir.path(), &[], "default");
}

#[test]
fn browsers_cannot_be_used_against_a_loopback_server() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), &["--allowed-host", "sightline.internal"]);
    // DNS rebinding: a foreign Host is refused, loopback names and allowed hosts are answered.
    assert_eq!(
        get_with_host(&s, "/api/v1/query?query=1", "evil.example"),
        403
    );
    assert_eq!(get_with_host(&s, "/health", "evil.example:4318"), 403);
    for host in [
        "localhost:4318",
        "127.0.0.1",
        "[::1]:80",
        "sightline.internal",
    ] {
        assert_eq!(
            get_with_host(&s, "/api/v1/query?query=1", host),
            200,
            "{host}"
        );
    }
    // Cross-site writes: a foreign Origin is refused, a text/plain body too.
    let spec = br#"{"name":"x","query":"up","step":"1m"}"#;
    let r = post(
        &s,
        "/api/v1/detectors",
        &[JSON, ("Origin", "http://evil.example")],
        spec,
    );
    assert_eq!(r.status, 403, "{}", r.text());
    let r = post(
        &s,
        "/api/v1/detectors",
        &[("Content-Type", "text/plain")],
        spec,
    );
    assert_eq!(r.status, 415, "{}", r.text());
    for path in [
        "/api/v1/aggregate",
        "/api/v1/detect/entropy",
        "/api/v1/traces/search",
    ] {
        let r = post(&s, path, &[("Content-Type", "text/plain")], b"{}");
        assert_eq!(r.status, 415, "{path}: {}", r.text());
    }
    let r = get(&s, "/api/v1/detectors", &[]);
    assert_eq!(r.status, 200);
    assert!(
        !r.text().contains("\"x\""),
        "no detector was created: {}",
        r.text()
    );
    // No CORS unless configured.
    let r = get(
        &s,
        "/api/v1/query?query=1",
        &[("Origin", "http://evil.example")],
    );
    assert_eq!(r.header("access-control-allow-origin"), None);
    drop(s);

    let s = start(
        dir.path(),
        &["--cors-allowed-origin", "http://grafana.example:3000"],
    );
    let r = http(
        s.http,
        "OPTIONS",
        "/api/v1/query",
        &[
            ("Origin", "http://grafana.example:3000"),
            ("Access-Control-Request-Method", "POST"),
        ],
        b"",
    )
    .unwrap();
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("http://grafana.example:3000")
    );
    let r = post(
        &s,
        "/api/v1/query",
        &[FORM, ("Origin", "http://grafana.example:3000")],
        b"query=1",
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

/// Whether the server has closed `c`: a read sees end of stream or a reset, not a timeout.
fn is_closed(c: &mut TcpStream) -> bool {
    c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut buf = [0u8; 64];
    match c.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

#[test]
fn silent_connections_are_closed_and_capped() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sightline.toml");
    std::fs::write(
        &config,
        "[limits]\nheader_read_timeout_secs = 2\nbody_read_timeout_secs = 2\n",
    )
    .unwrap();
    let s = start(dir.path(), &["--config", config.to_str().unwrap()]);
    // 600 sockets that never send a byte.
    let mut silent: Vec<TcpStream> = (0..600)
        .map(|_| TcpStream::connect(s.http).unwrap())
        .collect();
    assert_healthy(&s, Duration::from_secs(2));
    assert_ingests(&s, "default");
    std::thread::sleep(Duration::from_secs(4));
    // The server closed every one of them after the header timeout.
    let closed = silent.iter_mut().map(is_closed).filter(|&c| c).count();
    assert_eq!(closed, 600, "silent connections left open");
    // A half-sent request is closed the same way.
    let mut half = TcpStream::connect(s.http).unwrap();
    half.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    half.set_read_timeout(Some(Duration::from_secs(6))).unwrap();
    let t = Instant::now();
    let mut buf = Vec::new();
    let _ = half.read_to_end(&mut buf);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    // A body that stops halfway is given up on after the body timeout.
    let mut slow = TcpStream::connect(s.http).unwrap();
    write!(
        slow,
        "POST /api/v1/query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nquery=1"
    )
    .unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
    let t = Instant::now();
    let mut buf = Vec::new();
    let _ = slow.read_to_end(&mut buf);
    let answer = String::from_utf8_lossy(&buf);
    assert!(t.elapsed() < Duration::from_secs(6), "{:?}", t.elapsed());
    assert!(
        answer.starts_with("HTTP/1.1 400") || answer.starts_with("HTTP/1.1 408"),
        "a stalled body got {answer:?}"
    );
    drop(s);

    // The connection cap: past it a connection is closed at once, and the server recovers.
    let s = start(
        dir.path(),
        &[
            "--config",
            config.to_str().unwrap(),
            "--max-connections",
            "8",
        ],
    );
    let held: Vec<TcpStream> = (0..8)
        .map(|_| TcpStream::connect(s.http).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut extra = TcpStream::connect(s.http).unwrap();
    extra
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let _ = extra.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    let mut buf = Vec::new();
    let _ = extra.read_to_end(&mut buf);
    assert!(
        !String::from_utf8_lossy(&buf).contains("200 OK"),
        "a connection past the cap was served"
    );
    drop(held);
    std::thread::sleep(Duration::from_millis(300));
    assert_healthy(&s, Duration::from_secs(2));
}

#[test]
fn silent_grpc_connections_are_closed_and_capped() {
    use crate::ingest_bombs::{grpc_export, one_span};
    let dir = tempfile::tempdir().unwrap();
    let s = start(
        dir.path(),
        &["--header-read-timeout-secs", "2", "--max-connections", "64"],
    );
    // 64 sockets that never send a byte take every gRPC slot ...
    let mut silent: Vec<TcpStream> = (0..64)
        .map(|_| TcpStream::connect(s.grpc).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // ... so one more connection is closed at once, and HTTP is unaffected.
    let mut extra = TcpStream::connect(s.grpc).unwrap();
    assert!(
        is_closed(&mut extra),
        "a gRPC connection past the cap was kept open"
    );
    assert_healthy(&s, Duration::from_secs(2));
    assert_ingests(&s, "default");
    // After the first-bytes timeout the server has closed all of them ...
    std::thread::sleep(Duration::from_secs(3));
    let closed = silent.iter_mut().map(is_closed).filter(|&c| c).count();
    assert_eq!(closed, 64, "silent gRPC connections left open");
    drop(silent);
    // ... and the slots are free again: an export over gRPC is stored.
    grpc_export(s.grpc, one_span(41).into(), None, false).expect("gRPC export after the attack");
    let r = get(&s, "/api/traces/29292929292929292929292929292929", &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_restarts(s, dir.path(), &[], "default");
}

/// A hallucination request at the grounding work limit: about a second of CPU per request.
fn heavy_hallucination() -> Vec<u8> {
    let sentence = |i: usize| {
        format!(
            "The component number {i} reported value {} to the operator on duty. ",
            i * 7
        )
    };
    let mut answer = String::new();
    let mut i = 0;
    while answer.len() < 16 << 10 {
        answer.push_str(&sentence(i));
        i += 1;
    }
    let mut docs = Vec::new();
    let mut total = 0;
    let mut d = 0;
    while total + 4096 <= (256 << 10) - 4096 {
        let mut text = String::new();
        while text.len() < 4000 {
            text.push_str(&sentence(i));
            i += 3;
        }
        total += text.len();
        docs.push(serde_json::json!({"id": format!("d{d}"), "text": text}));
        d += 1;
    }
    serde_json::json!({"answer": answer, "documents": docs})
        .to_string()
        .into_bytes()
}

#[test]
fn one_tenant_cannot_starve_another_and_work_stays_off_the_async_workers() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(
        dir.path(),
        &[
            "--max-concurrent-queries",
            "2",
            "--max-concurrent-queries-per-tenant",
            "1",
        ],
    );
    let heavy = heavy_hallucination();
    let one = Instant::now();
    let r = post(
        &s,
        "/api/v1/detect/hallucination",
        &[JSON, ("X-Scope-OrgID", "a")],
        &heavy,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let single = one.elapsed();
    // Tenant a floods the server with heavy requests.
    let addr = s.http;
    let flood: Vec<_> = (0..4)
        .map(|_| {
            let body = heavy.clone();
            std::thread::spawn(move || {
                http(
                    addr,
                    "POST",
                    "/api/v1/detect/hallucination",
                    &[JSON, ("X-Scope-OrgID", "a")],
                    &body,
                )
                .map(|r| r.status)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    // Tenant b is served while a's requests queue on a's own share.
    let t = Instant::now();
    let r = post(
        &s,
        "/api/v1/query",
        &[FORM, ("X-Scope-OrgID", "b")],
        b"query=vector(1)",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        t.elapsed() < single + Duration::from_millis(500),
        "tenant b waited {:?} (one heavy request takes {single:?})",
        t.elapsed()
    );
    assert_healthy(&s, Duration::from_millis(500));
    assert_ingests(&s, "b");
    for f in flood {
        assert_eq!(f.join().unwrap().unwrap(), 200);
    }
    // Over the work limit: 413 before any work is done.
    let mut huge: serde_json::Value = serde_json::from_slice(&heavy).unwrap();
    huge["answer"] = serde_json::Value::String("word ".repeat(40_000));
    let t = Instant::now();
    let r = post(
        &s,
        "/api/v1/detect/hallucination",
        &[JSON],
        huge.to_string().as_bytes(),
    );
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(t.elapsed() < Duration::from_secs(1));
    assert_restarts(s, dir.path(), &[], "b");
}

#[test]
fn small_findings() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "secret-a team-a\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let s = start(
        dir.path(),
        &["--auth-tokens-file", tokens.to_str().unwrap()],
    );
    let log = std::fs::read_to_string(dir.path().join("server.log")).unwrap();
    assert!(
        log.contains("tokens file is readable by other users"),
        "no warning for a world-readable tokens file:\n{log}"
    );
    // Every route checks the tenant, the patterns endpoint included.
    for path in [
        "/loki/api/v1/patterns?query=%7Ba%3D%22b%22%7D",
        "/api/v1/query?query=1",
        "/api/v1/status/runtimeinfo",
    ] {
        let r = get(&s, path, &[]);
        assert_eq!(r.status, 401, "{path}: {}", r.text());
    }
    let auth = ("Authorization", "Bearer secret-a");
    let r = get(&s, "/api/v1/status/runtimeinfo", &[auth]);
    assert_eq!(r.status, 200);
    let cwd = std::env::current_dir().unwrap();
    assert!(
        !r.text().contains(cwd.to_str().unwrap()),
        "runtimeinfo shows the working directory: {}",
        r.text()
    );
    // Extreme ranges cannot overflow the point check.
    let r = get(
        &s,
        "/api/v1/quality?metric=hallucination_index&start=-9223372036&end=9223372036&step=1ms",
        &[auth],
    );
    assert_eq!(r.status, 400, "{}", r.text());
    drop(s);

    // With auth off, an invalid tenant id is 400 on every route.
    let s = start(dir.path(), &[]);
    let bad = ("X-Scope-OrgID", "../etc");
    for path in [
        "/api/v1/query?query=1",
        "/loki/api/v1/labels",
        "/api/v1/traces/search",
        "/api/v1/logs/search",
        "/api/v1/detectors",
        "/api/search",
    ] {
        let r = get(&s, path, &[bad]);
        assert_eq!(r.status, 400, "{path}: {}", r.text());
    }
    let r = post(&s, "/v1/traces", &[JSON, bad], b"{}");
    assert_eq!(r.status, 400, "{}", r.text());
    // Data files are private to the server's user.
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(dir.path().join("data"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "data dir mode {mode:o}");
}

/// The server's resident memory, from `/proc`.
fn rss_bytes(s: &ServerProcess) -> u64 {
    status_kib(s.child.id(), "VmRSS:") * 1024
}

#[test]
fn queries_stop_at_their_sample_budget_and_deadline() {
    use crate::prom_common::{encode, form, now_ms, post_write, ts};
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), &["--max-query-samples", "100000"]);
    // The unbounded query once took +1.2 GB: under a cap, a regression fails here.
    cap_address_space(&s, 3 << 30);
    // 200 series with a sample every 15 min over the last 46 hours.
    let end = now_ms() / 1000 * 1000;
    let start_ms = end - 46 * 3_600_000;
    let names: Vec<String> = (0..200).map(|i| format!("{i}")).collect();
    let series: Vec<_> = names
        .iter()
        .map(|i| {
            let samples: Vec<(i64, f64)> = (0..184)
                .map(|k| (start_ms + k * 900_000, k as f64))
                .collect();
            ts(&[("__name__", "load"), ("host", i)], &samples)
        })
        .collect();
    let r = post_write(s.http, &encode(series, vec![]), &[]);
    assert_eq!(r.status, 204, "{}", r.text());
    let before = rss_bytes(&s);
    // 200 series x 11,000 steps: far over 100,000 samples held.
    let q_start = end - 45 * 3_600_000;
    let (st, en) = ((q_start / 1000).to_string(), (end / 1000).to_string());
    let body = form(&[
        ("query", "load * 2"),
        ("start", &st),
        ("end", &en),
        ("step", "15"),
    ]);
    let r = post(&s, "/api/v1/query_range", &[FORM], body.as_bytes());
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(r.text().contains("too many samples"), "{}", r.text());
    assert!(
        rss_bytes(&s) < before + (200 << 20),
        "RSS grew from {before} to {}",
        rss_bytes(&s)
    );
    // Within the budget it answers.
    let body = form(&[
        ("query", "sum(load)"),
        ("start", &st),
        ("end", &en),
        ("step", "900"),
    ]);
    let r = post(&s, "/api/v1/query_range", &[FORM], body.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    // A 1 ms timeout answers 503 timeout, and the server keeps serving.
    let body = form(&[
        ("query", "count_over_time(load[2d])"),
        ("start", &st),
        ("end", &en),
        ("step", "600"),
        ("timeout", "1ms"),
    ]);
    let r = post(&s, "/api/v1/query_range", &[FORM], body.as_bytes());
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.text().contains("timeout"), "{}", r.text());
    assert_healthy(&s, Duration::from_secs(2));
    assert_ingests(&s, "default");
    assert_restarts(s, dir.path(), &[], "default");
}

#[test]
fn loki_metadata_reads_the_range_once_whatever_the_selectors() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), &[]);
    // 400 selectors once took +10 GB: under a cap, a regression fails here.
    cap_address_space(&s, 3 << 30);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let records: Vec<String> = (0..200)
        .map(|i| {
            format!(
                r#"{{"timeUnixNano":"{}","severityText":"INFO","body":{{"stringValue":"line {i}"}}}}"#,
                now - 1_000_000 * (i + 1)
            )
        })
        .collect();
    let body = format!(
        r#"{{"resourceLogs":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"api"}}}}]}},"scopeLogs":[{{"logRecords":[{}]}}]}}]}}"#,
        records.join(",")
    );
    let r = post(&s, "/v1/logs", &[JSON], body.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    let selectors = |n: usize| {
        (0..n)
            .map(|i| {
                format!(
                    "match[]={}",
                    url_encode(&format!("{{service_name=~\"api|x{i}\"}}"))
                )
            })
            .collect::<Vec<_>>()
            .join("&")
    };
    let r = post(
        &s,
        "/loki/api/v1/series",
        &[FORM],
        selectors(400).as_bytes(),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("limit is 64"), "{}", r.text());
    let t = Instant::now();
    let r = post(&s, "/loki/api/v1/series", &[FORM], selectors(64).as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.text().contains("\"service_name\":\"api\""),
        "{}",
        r.text()
    );
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let r = post(
        &s,
        "/loki/api/v1/index/stats",
        &[FORM],
        selectors(3).as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("\"entries\":200"), "{}", r.text());
    assert_ingests(&s, "default");
    assert_restarts(s, dir.path(), &[], "default");
}
