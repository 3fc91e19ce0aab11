//! A real Prometheus for the golden suite: blocks built with `promtool` from the fixed data,
//! one `prometheus` process per test binary, and a small blocking HTTP/1.0 client for its API.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value as Json;

use super::compare::Outcome;

/// A running Prometheus, killed on drop.
pub struct Prometheus {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `prometheus` and `promtool` can run here.
pub fn available() -> bool {
    ["prometheus", "promtool"].iter().all(|b| {
        Command::new(b)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

fn free_addr() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

impl Prometheus {
    /// Builds TSDB blocks from `openmetrics` text under `dir` and starts Prometheus on them.
    pub fn start(dir: &Path, openmetrics: &str) -> Prometheus {
        let om = dir.join("data.om");
        std::fs::write(&om, openmetrics).expect("write openmetrics");
        if let Ok(keep) = std::env::var("SIGHTLINE_GOLDEN_KEEP") {
            let _ = std::fs::write(keep, openmetrics);
        }
        let tsdb = dir.join("tsdb");
        let out = Command::new("promtool")
            .args(["tsdb", "create-blocks-from", "openmetrics"])
            .arg(&om)
            .arg(&tsdb)
            .output()
            .expect("run promtool");
        assert!(
            out.status.success(),
            "promtool failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let cfg = dir.join("prometheus.yml");
        // No scrape jobs: the TSDB holds only the blocks built above.
        std::fs::write(&cfg, "global:\n  scrape_interval: 1h\n").expect("write config");
        let addr = free_addr();
        let log = std::fs::File::create(dir.join("prometheus.log")).expect("log file");
        let child = Command::new("prometheus")
            .arg(format!("--storage.tsdb.path={}", tsdb.display()))
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!("--web.listen-address={addr}"))
            // Retention is counted back from the newest block; long enough to keep them all.
            .arg("--storage.tsdb.retention.time=100y")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn prometheus");
        let p = Prometheus { child, addr };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok((200, _)) = p.get("/-/ready") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "prometheus did not become ready; log: {}",
                std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        p
    }

    fn get(&self, path: &str) -> std::io::Result<(u16, String)> {
        let mut s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(5))?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        write!(s, "GET {path} HTTP/1.0\r\nHost: {}\r\n\r\n", self.addr)?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf)?;
        let text = String::from_utf8_lossy(&buf).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        Ok((status, body.to_owned()))
    }

    /// `/api/v1/query` at `time_ms`.
    pub fn instant(&self, query: &str, time_ms: i64) -> Outcome {
        self.api(&format!(
            "/api/v1/query?query={}&time={}",
            encode(query),
            secs(time_ms)
        ))
    }

    /// `/api/v1/query_range`.
    pub fn range(&self, query: &str, start_ms: i64, end_ms: i64, step_ms: i64) -> Outcome {
        self.api(&format!(
            "/api/v1/query_range?query={}&start={}&end={}&step={}",
            encode(query),
            secs(start_ms),
            secs(end_ms),
            secs(step_ms)
        ))
    }

    fn api(&self, path: &str) -> Outcome {
        let (status, body) = self.get(path).expect("prometheus request");
        let json: Json = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("prometheus answered {status} with non-JSON ({e}): {body}"));
        if json["status"] != "success" {
            return Outcome::Error(json["error"].as_str().unwrap_or("?").to_owned());
        }
        super::compare::from_prometheus(&json["data"])
    }
}

fn secs(ms: i64) -> String {
    format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000))
}

/// Percent-encodes a query parameter.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
