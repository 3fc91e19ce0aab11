//! Helpers shared by the server's integration tests: running the real binary, a minimal
//! blocking HTTP/1.1 client, and reading back what the store holds.

#![allow(dead_code, clippy::unwrap_used, missing_docs)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sightline_storage::{
    LogRecord, ScanRequest, Signal, SpanRecord, Store, StoreConfig, TenantId, TimeRange,
};

/// A loopback address with a port that was free a moment ago.
pub fn free_addr() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// A response of [`http`].
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`).
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<HttpResponse> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes())?;
    // The server may answer (413) and close before reading a large body.
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no header end"))?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {status_line:?}")))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    Ok(HttpResponse {
        status,
        headers,
        body,
    })
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(pos) = b.windows(2).position(|w| w == b"\r\n") {
        let len = usize::from_str_radix(String::from_utf8_lossy(&b[..pos]).trim(), 16).unwrap_or(0);
        if len == 0 {
            break;
        }
        let start = pos + 2;
        out.extend_from_slice(&b[start..(start + len).min(b.len())]);
        b = &b[(start + len + 2).min(b.len())..];
    }
    out
}

/// The real `sightline` binary, running.
pub struct ServerProcess {
    pub child: Child,
    pub http: SocketAddr,
    pub grpc: SocketAddr,
    pub log: PathBuf,
}

impl ServerProcess {
    /// Starts `sightline serve` on free ports and waits for `/health`.
    pub fn start(data_dir: &Path, extra: &[&str], log: PathBuf) -> Self {
        for _attempt in 0..3 {
            if let Some(p) = Self::try_start(data_dir, extra, &log, free_addr(), free_addr()) {
                return p;
            }
        }
        panic!("sightline did not start");
    }

    /// Starts `sightline serve` on the given ports (a restart in place) and waits for
    /// `/health`; retries for a while if the ports are not free yet.
    pub fn start_at(
        data_dir: &Path,
        extra: &[&str],
        log: PathBuf,
        http: SocketAddr,
        grpc: SocketAddr,
    ) -> Self {
        for _attempt in 0..10 {
            if let Some(p) = Self::try_start(data_dir, extra, &log, http, grpc) {
                return p;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("sightline did not start on {http}");
    }

    fn try_start(
        data_dir: &Path,
        extra: &[&str],
        log: &Path,
        http_addr: SocketAddr,
        grpc_addr: SocketAddr,
    ) -> Option<Self> {
        let log_file = std::fs::File::create(log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_sightline"))
            .arg("serve")
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--http-addr")
            .arg(http_addr.to_string())
            .arg("--grpc-addr")
            .arg(grpc_addr.to_string())
            .args(extra)
            .env("SIGHTLINE_LOG_LEVEL", "info")
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .unwrap();
        let mut p = ServerProcess {
            child,
            http: http_addr,
            grpc: grpc_addr,
            log: log.to_path_buf(),
        };
        // Under a base path, every route answers below it.
        let base = extra
            .iter()
            .position(|a| *a == "--http-base-path")
            .and_then(|i| extra.get(i + 1))
            .map_or("", |b| b.trim_end_matches('/'));
        let health = format!("{base}/health");
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = p.child.try_wait() {
                break;
            }
            if let Ok(r) = http(http_addr, "GET", &health, &[], b"")
                && r.status == 200
            {
                return Some(p);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = p.child.kill();
        let _ = p.child.wait();
        eprintln!(
            "server did not start, retrying; log:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        None
    }

    /// SIGKILL (no flush, no shutdown): what a crash or OOM kill does.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM, then the exit status (must be success).
    pub fn stop(mut self) {
        let pid = self.child.id().to_string();
        let st = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(st.success());
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(
                    status.success(),
                    "sightline exited with {status}; log:\n{}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                );
                return;
            }
            assert!(
                Instant::now() < deadline,
                "sightline did not exit after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Opens a data directory for reading back (no background thread).
pub fn open_store(dir: &Path) -> Store {
    Store::open(
        dir,
        StoreConfig {
            background: false,
            ..StoreConfig::default()
        },
    )
    .unwrap()
}

pub fn tenant(s: &str) -> TenantId {
    TenantId::new(s).unwrap()
}

pub fn all_spans(store: &Store, t: &TenantId) -> Vec<SpanRecord> {
    let res = store
        .scan(&ScanRequest::new(t.clone(), Signal::Spans, TimeRange::ALL))
        .unwrap();
    res.batches
        .iter()
        .flat_map(|b| sightline_storage::columnar::spans_from_batch(b).unwrap())
        .collect()
}

pub fn all_logs(store: &Store, t: &TenantId) -> Vec<LogRecord> {
    let res = store
        .scan(&ScanRequest::new(t.clone(), Signal::Logs, TimeRange::ALL))
        .unwrap();
    res.batches
        .iter()
        .flat_map(|b| sightline_storage::columnar::logs_from_batch(b).unwrap())
        .collect()
}

/// Every sample of a tenant: (series id, timestamp ms, value).
pub fn all_samples(store: &Store, t: &TenantId) -> Vec<(u64, i64, f64)> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, TimestampMillisecondType, UInt64Type};
    let res = store
        .scan(&ScanRequest::new(
            t.clone(),
            Signal::Samples,
            TimeRange::ALL,
        ))
        .unwrap();
    let mut out = Vec::new();
    for b in &res.batches {
        let ids = b.column(0).as_primitive::<UInt64Type>();
        let ts = b.column(1).as_primitive::<TimestampMillisecondType>();
        let vs = b.column(2).as_primitive::<Float64Type>();
        for i in 0..b.num_rows() {
            out.push((ids.value(i), ts.value(i), vs.value(i)));
        }
    }
    out
}

/// The Python interpreter for real-client tests: `SIGHTLINE_PYTHON`, or a loud skip (a
/// failure when `SIGHTLINE_REQUIRE_PYTHON=1`).
pub fn python() -> Option<PathBuf> {
    python_from("SIGHTLINE_PYTHON", "cli/tests/python/requirements.txt")
}

/// The Python of the OpenLIT venv (`cli/tests/python/requirements-openlit.txt`; OpenLIT
/// needs openai < 3), from `SIGHTLINE_OPENLIT_PYTHON`; `None` (the test skips) when unset,
/// unless `SIGHTLINE_REQUIRE_PYTHON=1`.
pub fn openlit_python() -> Option<PathBuf> {
    python_from(
        "SIGHTLINE_OPENLIT_PYTHON",
        "cli/tests/python/requirements-openlit.txt",
    )
}

/// The Python named by `var`; `None` (the test skips) when unset, unless
/// `SIGHTLINE_REQUIRE_PYTHON=1`.
fn python_from(var: &str, requirements: &str) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            assert!(
                std::env::var("SIGHTLINE_REQUIRE_PYTHON").as_deref() != Ok("1"),
                "SIGHTLINE_REQUIRE_PYTHON=1 but {var} is not set"
            );
            eprintln!("\n*** SKIPPED: set {var} to a Python with {requirements} installed ***\n");
            None
        }
    }
}

/// A numeric field of `/proc/<pid>/status` in KiB (`VmRSS:`, `VmSize:`); 0 when unreadable.
pub fn status_kib(pid: u32, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Limits the running server's address space to what it has mapped plus `headroom` bytes
/// (`prlimit --as`), so a memory regression fails the test instead of exhausting the machine.
/// Says so and goes on without a limit where prlimit is missing.
pub fn cap_address_space(s: &ServerProcess, headroom: u64) {
    let pid = s.child.id();
    let limit = status_kib(pid, "VmSize:") * 1024 + headroom;
    let st = Command::new("prlimit")
        .args([format!("--pid={pid}"), format!("--as={limit}")])
        .status();
    if !st.is_ok_and(|s| s.success()) {
        eprintln!("prlimit unavailable: running without an address-space limit");
    }
}
