//! Crash in the middle of a real client: the Python OpenTelemetry SDK streams traces into the
//! real `sightline` binary (OTLP/HTTP, then OTLP/gRPC) while the test SIGKILLs the server
//! twice and restarts it in place on the same ports. Afterwards every span whose export the
//! SDK saw acknowledged is stored; a batch that was not acknowledged is stored whole or not
//! at all; and duplicates (a batch stored but cut before its acknowledgement, then retried by
//! the SDK) are bounded by one batch per kill, since OTLP delivery is at-least-once.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

const BATCHES: usize = 240;
const SPANS_PER_BATCH: usize = 5;
/// Kill the server once the client has recorded this many exports.
const KILL_AT: [usize; 2] = [60, 150];

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn manifest_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn run(py: &Path, transport: &str, tmp: &Path) {
    let data = tmp.join(format!("data-{transport}"));
    let manifest = tmp.join(format!("stream-{transport}.jsonl"));
    let mut server = ServerProcess::start(&data, &[], tmp.join(format!("{transport}-0.log")));
    let (http_addr, grpc_addr) = (server.http, server.grpc);
    let endpoint = match transport {
        "http" => http_addr.to_string(),
        _ => grpc_addr.to_string(),
    };
    let mut client = Command::new(py)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/otlp_stream.py"))
        .args(["--transport", transport, "--endpoint", &endpoint])
        .args(["--batches", &BATCHES.to_string()])
        .arg("--manifest")
        .arg(&manifest)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut killed_at = Vec::new();
    for (k, &at) in KILL_AT.iter().enumerate() {
        loop {
            assert!(Instant::now() < deadline, "client too slow");
            let n = manifest_lines(&manifest).len();
            if n >= at {
                break;
            }
            if let Some(st) = client.try_wait().unwrap() {
                panic!("client exited early ({st}) after {n} exports");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        server.kill();
        killed_at.push(manifest_lines(&manifest).len());
        std::thread::sleep(Duration::from_millis(300));
        server = ServerProcess::start_at(
            &data,
            &[],
            tmp.join(format!("{transport}-{}.log", k + 1)),
            http_addr,
            grpc_addr,
        );
    }
    let out = client.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.stop();

    let lines = manifest_lines(&manifest);
    assert_eq!(lines.len(), BATCHES);
    assert!(
        killed_at.iter().all(|&n| n < BATCHES),
        "the kills must land while the client runs: {killed_at:?}"
    );
    let store = open_store(&data);
    let mut stored: HashMap<(String, String), usize> = HashMap::new();
    for s in all_spans(&store, &tenant("default")) {
        *stored
            .entry((hex(&s.trace_id.0), hex(&s.span_id.0)))
            .or_default() += 1;
    }
    let (mut acked, mut failed, mut duplicates) = (0, 0, 0);
    for l in &lines {
        let ids: Vec<(String, String)> = l["spans"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p[0].as_str().unwrap().to_owned(),
                    p[1].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(ids.len(), SPANS_PER_BATCH);
        let counts: Vec<usize> = ids
            .iter()
            .map(|k| stored.get(k).copied().unwrap_or(0))
            .collect();
        duplicates += counts.iter().map(|&c| c.saturating_sub(1)).sum::<usize>();
        if l["ok"].as_bool().unwrap() {
            acked += 1;
            assert!(
                counts.iter().all(|&c| c >= 1),
                "acknowledged batch {} lost spans: {counts:?}",
                l["batch"]
            );
        } else {
            failed += 1;
            let present = counts.iter().filter(|&&c| c > 0).count();
            assert!(
                present == 0 || present == SPANS_PER_BATCH,
                "unacknowledged batch {} stored partly: {counts:?}",
                l["batch"]
            );
        }
    }
    let sent: usize = lines.len() * SPANS_PER_BATCH;
    assert!(
        stored.keys().count() <= sent,
        "spans nobody sent were stored"
    );
    assert!(
        duplicates <= KILL_AT.len() * SPANS_PER_BATCH,
        "{duplicates} duplicate spans for {} kills",
        KILL_AT.len()
    );
    assert!(
        acked >= BATCHES - 4,
        "the SDK's retries should carry almost every batch over a restart: {acked} acknowledged, {failed} failed"
    );
    eprintln!(
        "{transport}: {acked} batches acknowledged, {failed} failed, {duplicates} duplicate spans, kills after {killed_at:?} exports"
    );
}

#[test]
fn sigkill_in_the_middle_of_a_python_sdk_client_keeps_every_acknowledged_span() {
    let Some(py) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    run(&py, "http", tmp.path());
    run(&py, "grpc", tmp.path());
}
