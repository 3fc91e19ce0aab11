//! A real full disk under the real binary: the data directory sits on a small tmpfs, a filler
//! file takes every free byte, exports are refused with a retryable 503 while `/health` keeps
//! answering, space is freed, and after SIGKILL and a restart exactly the acknowledged spans
//! are stored: every one acknowledged before, during and after the episode, and none of the
//! refused ones. Needs root to mount the tmpfs; elsewhere it says why it was skipped. (The
//! WAL's fault-injection seam, which runs everywhere, is `storage/src/wal/fault_tests.rs`.)

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use sightline_storage::columnar::spans_from_batch;
use sightline_storage::{ScanRequest, Signal, TimeRange};

use crate::common::{ServerProcess, http, open_store, tenant};

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// A mounted tmpfs, unmounted when dropped (also when the test panics).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Result<Self, String> {
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if out.status.success() {
            Ok(Self(at.to_owned()))
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// One OTLP/JSON export of 20 spans numbered `first..first + 20` (span id = number).
fn export(first: u64) -> Vec<u8> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let spans: Vec<String> = (first..first + 20)
        .map(|n| {
            format!(
                r#"{{"traceId":"{:032x}","spanId":"{:016x}","name":"op {n} {}","kind":2,"startTimeUnixNano":"{}","endTimeUnixNano":"{}"}}"#,
                first + 1,
                n + 1,
                "x".repeat(200),
                now - 1_000_000,
                now
            )
        })
        .collect();
    format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"svc"}}}}]}},"scopeSpans":[{{"spans":[{}]}}]}}]}}"#,
        spans.join(",")
    )
    .into_bytes()
}

/// Fills the file system holding `path` to the last byte.
fn fill(path: &Path) {
    let mut f = std::fs::File::create(path).expect("filler");
    let chunk = vec![0u8; 64 << 10];
    loop {
        match f.write(&chunk) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    // Whatever is left is smaller than a chunk: take it byte by byte.
    while let Ok(n) = f.write(&[0u8; 512]) {
        if n == 0 {
            break;
        }
    }
}

#[test]
fn exports_acknowledged_around_a_full_disk_survive_a_crash() {
    if !running_as_root() {
        println!("skipped: mounting a tmpfs needs root");
        return;
    }
    let mount = tempfile::tempdir().expect("tempdir");
    let logs = tempfile::tempdir().expect("tempdir");
    let fs = match Tmpfs::mount(mount.path(), "16m") {
        Ok(fs) => fs,
        Err(why) => {
            println!(
                "skipped: cannot mount a tmpfs at {}: {why}",
                mount.path().display()
            );
            return;
        }
    };
    let data = fs.0.join("data");
    let filler = fs.0.join("filler");
    let log = logs.path().join("server.log");
    let s = ServerProcess::start(&data, &[], log.clone());
    let json = [("Content-Type", "application/json")];
    let mut acked: Vec<u64> = Vec::new();
    let mut n = 0u64;
    let send = |n: &mut u64| {
        let r = http(s.http, "POST", "/v1/traces", &json, &export(*n)).unwrap();
        let batch = *n..*n + 20;
        *n += 20;
        (r, batch)
    };
    for _ in 0..20 {
        let (r, batch) = send(&mut n);
        assert_eq!(r.status, 200, "{}", r.text());
        acked.extend(batch);
    }
    fill(&filler);
    let mut refused = 0;
    for _ in 0..200 {
        let (r, batch) = send(&mut n);
        match r.status {
            200 => acked.extend(batch),
            503 => {
                assert!(r.text().contains("disk full"), "{}", r.text());
                assert!(
                    r.header("retry-after").is_some(),
                    "a full disk must be retryable"
                );
                refused += 1;
                if refused >= 20 {
                    break;
                }
            }
            other => panic!("a full disk answered {other}: {}", r.text()),
        }
    }
    assert!(refused >= 20, "the disk never filled up");
    let r = http(s.http, "GET", "/health", &[], b"").unwrap();
    assert_eq!(r.status, 200, "/health on a full disk");
    std::fs::remove_file(&filler).expect("free space");
    for _ in 0..100 {
        let (r, batch) = send(&mut n);
        assert_eq!(
            r.status,
            200,
            "after space was freed: {}; log:\n{}",
            r.text(),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        acked.extend(batch);
    }
    s.kill();

    // The restarted server starts and serves what was acknowledged.
    let s = ServerProcess::start(&data, &[], log);
    let last = acked.last().copied().unwrap();
    let r = http(
        s.http,
        "GET",
        &format!("/api/traces/{:032x}", last - 19 + 1),
        &[],
        b"",
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    s.kill();

    let store = open_store(&data);
    let res = store
        .scan(&ScanRequest::new(
            tenant("default"),
            Signal::Spans,
            TimeRange::ALL,
        ))
        .expect("scan");
    let mut stored: Vec<u64> = res
        .batches
        .iter()
        .flat_map(|b| spans_from_batch(b).expect("decode"))
        .map(|s| u64::from_be_bytes(s.span_id.0) - 1)
        .collect();
    stored.sort_unstable();
    acked.sort_unstable();
    assert_eq!(
        stored.len(),
        acked.len(),
        "stored vs acknowledged span count"
    );
    assert_eq!(stored, acked, "exactly the acknowledged spans");
    drop(store);
}
