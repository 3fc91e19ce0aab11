//! Prometheus remote write 1.0 into a real `sightline serve`: refused requests (bad snappy,
//! bad protobuf, bad labels, wrong encodings, oversized bodies) store nothing, and a real
//! Prometheus (`/usr/bin/prometheus`, or `SIGHTLINE_PROMETHEUS`) scraping a target and
//! forwarding with `remote_write` leaves Sightline holding exactly the samples it holds.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::prom_common::*;
use serde_json::{Value, json};

/// Name, body, extra headers, expected status, text the answer must contain.
type Case<'a> = (&'a str, Vec<u8>, Vec<(&'a str, &'a str)>, u16, &'a str);

#[test]
fn refused_requests_store_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = ServerProcess::start(
        &data,
        &["--fsync", "never", "--max-body-bytes", "4096"],
        dir.path().join("log"),
    );
    let addr = server.http;
    let t = now_ms() - 60_000;
    let good = ts(&[("__name__", "ok_metric"), ("job", "x")], &[(t, 1.0)]);
    let cases: Vec<Case> = vec![
        (
            "not snappy",
            b"\xff\xff\xff\xff\xff\xff".to_vec(),
            vec![],
            400,
            "snappy",
        ),
        (
            "not protobuf",
            snap::raw::Encoder::new()
                .compress_vec(b"\x0a\xff\xff\xff\xff\x0f")
                .unwrap(),
            vec![],
            400,
            "WriteRequest",
        ),
        (
            "no __name__",
            encode(vec![good.clone(), ts(&[("job", "x")], &[(t, 1.0)])], vec![]),
            vec![],
            400,
            "__name__",
        ),
        (
            "duplicate label",
            encode(
                vec![
                    good.clone(),
                    ts(&[("__name__", "m"), ("a", "1"), ("a", "2")], &[(t, 1.0)]),
                ],
                vec![],
            ),
            vec![],
            400,
            "duplicate",
        ),
        (
            "empty label name",
            encode(
                vec![
                    ts(&[("__name__", "m"), ("", "v")], &[(t, 1.0)]),
                    good.clone(),
                ],
                vec![],
            ),
            vec![],
            400,
            "empty label name",
        ),
        (
            "gzip",
            encode(vec![good.clone()], vec![]),
            vec![("Content-Encoding", "gzip")],
            415,
            "snappy",
        ),
        (
            "remote write 2.0",
            encode(vec![good.clone()], vec![]),
            vec![(
                "Content-Type",
                "application/x-protobuf;proto=io.prometheus.write.v2.Request",
            )],
            415,
            "prometheus.WriteRequest",
        ),
        (
            "over the body limit",
            encode(
                vec![ts(
                    &[("__name__", "big")],
                    &(0..2000)
                        .map(|i| (t + i, i as f64 * 1.37))
                        .collect::<Vec<_>>(),
                )],
                vec![],
            ),
            vec![],
            413,
            "limit",
        ),
    ];
    for (name, body, headers, status, needle) in &cases {
        let mut h = vec![
            ("Content-Type", "application/x-protobuf"),
            ("Content-Encoding", "snappy"),
        ];
        for (k, v) in headers {
            h.retain(|(hk, _)| !hk.eq_ignore_ascii_case(k));
            h.push((k, v));
        }
        let r = http(addr, "POST", "/api/v1/write", &h, body).unwrap();
        assert_eq!(r.status, *status, "{name}: {}", r.text());
        assert!(r.text().contains(needle), "{name}: {}", r.text());
        assert!(
            r.header("content-type").unwrap().starts_with("text/plain"),
            "{name}"
        );
    }
    // Nothing of any of them is visible...
    let (_, v) = get_json(addr, "/api/v1/label/__name__/values", &[], &[]);
    assert_eq!(v["data"], json!([]));
    // ...the server still takes good requests, and counts the refusals.
    let r = post_write(addr, &encode(vec![good], vec![]), &[]);
    assert_eq!(r.status, 204, "{}", r.text());
    assert!(r.body.is_empty());
    let m = http(addr, "GET", "/metrics", &[], b"").unwrap().text();
    assert!(
        m.contains(r#"sightline_ingest_requests_total{signal="metrics",transport="prometheus_remote_write",outcome="malformed"} 5"#),
        "{m}"
    );
    assert!(
        m.contains(r#"sightline_ingest_items_total{signal="metrics",transport="prometheus_remote_write"} 1"#),
        "{m}"
    );
    server.stop();
    // ...and on disk only the good sample exists.
    let store = open_store(&data);
    let samples = all_samples(&store, &tenant("default"));
    assert_eq!(samples.len(), 1);
    assert_eq!((samples[0].1, samples[0].2), (t, 1.0));
    let names = store.label_values(&tenant("default"), "__name__");
    assert_eq!(names, ["ok_metric"]);
}

/// The Prometheus binary (`SIGHTLINE_PROMETHEUS`, else `prometheus` on `PATH`), or a loud skip (a failure when `SIGHTLINE_REQUIRE_PROMETHEUS=1`).
fn prometheus() -> Option<PathBuf> {
    let on_path = || {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("prometheus"))
                .find(|p| p.is_file())
        })
    };
    let p = std::env::var_os("SIGHTLINE_PROMETHEUS")
        .map(PathBuf::from)
        .or_else(on_path)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/prometheus"));
    if p.exists() {
        return Some(p);
    }
    assert!(
        std::env::var("SIGHTLINE_REQUIRE_PROMETHEUS").as_deref() != Ok("1"),
        "SIGHTLINE_REQUIRE_PROMETHEUS=1 but {} does not exist",
        p.display()
    );
    eprintln!(
        "\n*** SKIPPED: no Prometheus at {} (set SIGHTLINE_PROMETHEUS) ***\n",
        p.display()
    );
    None
}

/// A scrape target serving fixed-shape Prometheus text metrics whose values move with each
/// scrape.
struct Target {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Target {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let scrapes = AtomicU64::new(0);
        let stop2 = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                let Ok((mut s, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                s.set_nonblocking(false).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                let mut req = Vec::new();
                let mut buf = [0u8; 1024];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                let n = scrapes.fetch_add(1, Ordering::Relaxed) + 1;
                let body = format!(
                    "# HELP demo_requests_total Requests served.\n\
                     # TYPE demo_requests_total counter\n\
                     demo_requests_total{{path=\"/a\"}} {a}\n\
                     demo_requests_total{{path=\"/b\"}} {b}\n\
                     # HELP demo_temperature_celsius Temperature.\n\
                     # TYPE demo_temperature_celsius gauge\n\
                     demo_temperature_celsius {temp}\n\
                     # HELP demo_latency_seconds Latency.\n\
                     # TYPE demo_latency_seconds histogram\n\
                     demo_latency_seconds_bucket{{le=\"0.1\"}} {n}\n\
                     demo_latency_seconds_bucket{{le=\"1\"}} {b}\n\
                     demo_latency_seconds_bucket{{le=\"+Inf\"}} {b}\n\
                     demo_latency_seconds_sum {sum}\n\
                     demo_latency_seconds_count {b}\n",
                    a = n * 3,
                    b = n * 2,
                    temp = 20.0 + (n % 7) as f64 * 0.37,
                    sum = n as f64 * 0.731,
                );
                let resp = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(resp.as_bytes());
            }
        });
        Self {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Prometheus {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_prometheus(
    bin: &PathBuf,
    dir: &std::path::Path,
    target: SocketAddr,
    sightline: SocketAddr,
) -> Prometheus {
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n\
         scrape_configs:\n  - job_name: demo\n    static_configs:\n      - targets: ['{target}']\n\
         remote_write:\n  - url: http://{sightline}/api/v1/write\n    queue_config:\n      batch_send_deadline: 500ms\n      min_backoff: 50ms\n      max_backoff: 1s\n    metadata_config:\n      send_interval: 1s\n"
    );
    let cfg = dir.join("prometheus.yml");
    std::fs::write(&cfg, config).unwrap();
    let addr = free_addr();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let child = Command::new(bin)
        .arg(format!("--config.file={}", cfg.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .arg("--log.level=warn")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let p = Prometheus { child, addr };
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if http(addr, "GET", "/-/ready", &[], b"").is_ok_and(|r| r.status == 200) {
            return p;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!(
        "prometheus did not start:\n{}",
        std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
    );
}

/// Series of a matrix result, keyed by their labels, with their points.
fn by_labels(v: &Value) -> Vec<(String, Vec<(i64, String)>)> {
    points(v)
        .into_iter()
        .map(|(m, p)| (m.to_string(), p))
        .collect()
}

#[test]
fn real_prometheus_remote_write_matches() {
    let Some(bin) = prometheus() else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(
        &dir.path().join("data"),
        &["--fsync", "never"],
        dir.path().join("log"),
    );
    let target = Target::start();
    let prom = start_prometheus(&bin, dir.path(), target.addr, server.http);
    let log = || std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();

    // Wait until Sightline holds a few scrapes of the target.
    let deadline = Instant::now() + Duration::from_secs(90);
    let newest = loop {
        assert!(
            Instant::now() < deadline,
            "no samples arrived; prometheus log:\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(500));
        let (s, v) = get_json(
            server.http,
            "/api/v1/query",
            &[
                ("query", "demo_requests_total{path=\"/a\"}[5m]"),
                ("time", &secs(now_ms())),
            ],
            &[],
        );
        assert_eq!(s, 200, "{v}");
        let got = points(&v);
        if let Some((_, pts)) = got.first()
            && pts.len() >= 6
        {
            break pts.last().unwrap().0;
        }
    };
    // Every series of that scrape has been sent once the batch deadline passed again.
    std::thread::sleep(Duration::from_secs(3));
    let at = secs(newest);

    // Raw samples: a range selector at the same instant on both.
    let raw = |addr: SocketAddr| {
        let (s, v) = get_json(
            addr,
            "/api/v1/query",
            &[("query", "{job=\"demo\"}[20s]"), ("time", &at)],
            &[],
        );
        assert_eq!(s, 200, "{v}");
        assert_eq!(v["data"]["resultType"], "matrix");
        by_labels(&v)
    };
    let (ours, theirs) = (raw(server.http), raw(prom.addr));
    assert!(ours.len() >= 10, "{ours:?}");
    assert_eq!(ours, theirs);
    let samples: usize = ours.iter().map(|(_, p)| p.len()).sum();
    eprintln!(
        "{} series, {samples} samples identical in Sightline and Prometheus",
        ours.len()
    );

    // Range queries over a window both hold completely.
    let start = secs(newest - 10_000);
    for query in [
        "demo_requests_total",
        "demo_temperature_celsius",
        "sum(demo_latency_seconds_bucket) by (le)",
    ] {
        let range = |addr: SocketAddr| {
            let (s, v) = post_json(
                addr,
                "/api/v1/query_range",
                &[
                    ("query", query),
                    ("start", &start),
                    ("end", &at),
                    ("step", "1"),
                ],
                &[],
            );
            assert_eq!(s, 200, "{v}");
            by_labels(&v)
        };
        let (ours, theirs) = (range(server.http), range(prom.addr));
        assert!(!ours.is_empty(), "{query}");
        assert_eq!(ours, theirs, "{query}");
    }
    // rate(): same numbers up to float rounding.
    let rate = |addr: SocketAddr| {
        let (_, v) = post_json(
            addr,
            "/api/v1/query_range",
            &[
                ("query", "rate(demo_requests_total[5s])"),
                ("start", &start),
                ("end", &at),
                ("step", "1"),
            ],
            &[],
        );
        by_labels(&v)
    };
    let (ours, theirs) = (rate(server.http), rate(prom.addr));
    assert_eq!(ours.len(), theirs.len());
    for ((l1, p1), (l2, p2)) in ours.iter().zip(&theirs) {
        assert_eq!(l1, l2);
        assert_eq!(p1.len(), p2.len(), "{l1}");
        for ((t1, v1), (t2, v2)) in p1.iter().zip(p2) {
            let (a, b): (f64, f64) = (v1.parse().unwrap(), v2.parse().unwrap());
            assert!(
                t1 == t2 && (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                "{l1} {t1}: {a} vs {b}"
            );
        }
    }

    // Metadata forwarded by Prometheus matches its own.
    for metric in [
        "demo_requests_total",
        "demo_latency_seconds",
        "demo_temperature_celsius",
    ] {
        let deadline = Instant::now() + Duration::from_secs(30);
        let theirs = get_json(prom.addr, "/api/v1/metadata", &[("metric", metric)], &[]).1;
        loop {
            let ours = get_json(server.http, "/api/v1/metadata", &[("metric", metric)], &[]).1;
            if ours["data"] == theirs["data"] {
                break;
            }
            assert!(Instant::now() < deadline, "{metric}: {ours} vs {theirs}");
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    drop(prom);
    drop(target);
    server.stop();
}
