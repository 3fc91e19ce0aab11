//! A real full disk: a small tmpfs (4 MiB, half of it taken by a filler file) fills up under the WAL, space is freed, and every append
//! acknowledged after that survives a crash and restart. Needs root to mount the tmpfs;
//! elsewhere it says why it was skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

use sightline_storage::columnar::spans_from_batch;
use sightline_storage::{ScanRequest, Signal, SpanRecord, StorageError, Store, TimeRange};

use super::{T0, config, span, tenant};

const ENOSPC: i32 = 28;

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

fn span_ids(store: &Store) -> Vec<[u8; 8]> {
    let res = store
        .scan(&ScanRequest::new(
            tenant("acme"),
            Signal::Spans,
            TimeRange::ALL,
        ))
        .expect("scan");
    let mut ids: Vec<[u8; 8]> = res
        .batches
        .iter()
        .flat_map(|b| spans_from_batch(b).expect("decode"))
        .map(|s| s.span_id.0)
        .collect();
    ids.sort();
    ids
}

#[test]
fn appends_acknowledged_after_a_full_disk_survive_a_crash() {
    if !running_as_root() {
        println!("skipped: mounting a tmpfs needs root");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let fs = match Tmpfs::mount(dir.path(), "4m") {
        Ok(fs) => fs,
        Err(why) => {
            println!(
                "skipped: cannot mount a tmpfs at {}: {why}",
                dir.path().display()
            );
            return;
        }
    };
    let root = fs.0.join("store");
    // Taken first, given back once the disk is full.
    let filler = fs.0.join("filler");
    std::fs::write(&filler, vec![0u8; 2 << 20]).expect("filler");
    let t = tenant("acme");
    let mut acked: Vec<[u8; 8]> = Vec::new();
    let mut n = 0u64;
    let next = |n: &mut u64| -> Vec<SpanRecord> {
        let batch = (0..20)
            .map(|i| span(*n + i, T0 + (*n + i) as i64))
            .collect();
        *n += 20;
        batch
    };
    {
        let store = Store::open(&root, config()).expect("open");
        let full = loop {
            assert!(n < 1_000_000, "the 4 MiB disk never filled up");
            let batch = next(&mut n);
            match store.append_spans(&t, &batch) {
                Ok(()) => acked.extend(batch.iter().map(|s| s.span_id.0)),
                Err(e) => break e,
            }
        };
        assert!(
            matches!(&full, StorageError::Io { source, .. } if source.raw_os_error() == Some(ENOSPC)),
            "{full:?}"
        );
        assert!(!acked.is_empty(), "nothing fitted before the disk was full");
        std::fs::remove_file(&filler).expect("free space");
        for _ in 0..100 {
            let one = vec![span(n, T0 + n as i64)];
            n += 1;
            store
                .append_spans(&t, &one)
                .expect("append after space was freed");
            acked.push(one[0].span_id.0);
        }
        assert_eq!(span_ids(&store).len(), acked.len());
        // Dropped without close: no flush, as after a crash.
    }
    let store = Store::open(&root, config()).expect("reopen");
    assert!(
        store.open_report().wal.problems.is_empty(),
        "{:?}",
        store.open_report().wal
    );
    acked.sort();
    assert_eq!(span_ids(&store), acked, "exactly the acknowledged spans");
    drop(store);
}
