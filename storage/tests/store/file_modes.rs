//! Nothing the store writes is readable by anyone but its owner.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sightline_storage::{MetricKind, Predicate, ScanRequest, SeriesDef, Signal, Store, TimeRange};

use super::{T0, config, log, metric_batch, span, tenant};

/// Every path below `dir` with its permission bits.
fn walk(dir: &Path, out: &mut Vec<(PathBuf, u32, bool)>) {
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let meta = e.metadata().expect("metadata");
        out.push((e.path(), meta.permissions().mode() & 0o777, meta.is_dir()));
        if meta.is_dir() {
            walk(&e.path(), out);
        }
    }
}

#[test]
fn every_file_and_directory_is_owner_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("data-dir");
    let t = tenant("acme");
    {
        let store = Store::open(&root, config()).expect("open");
        store
            .append_spans(
                &t,
                &(0..50).map(|n| span(n, T0 + n as i64)).collect::<Vec<_>>(),
            )
            .expect("spans");
        store
            .append_logs(
                &t,
                &(0..50).map(|n| log(n, T0 + n as i64)).collect::<Vec<_>>(),
            )
            .expect("logs");
        let series = vec![SeriesDef::new(
            "tokens",
            MetricKind::Counter,
            vec![("model".into(), "a".into())],
        )];
        store
            .append_metrics(&t, &metric_batch(&series, T0 / 1_000_000, 10))
            .expect("metrics");
        store.flush().expect("flush");
        // Reading a segment's text index must not leave readable files behind either.
        let req = ScanRequest::new(t.clone(), Signal::Logs, TimeRange::ALL)
            .with(Predicate::FullText("timeout".into()));
        assert_eq!(store.scan(&req).expect("scan").num_rows(), 10);
        store
            .append_spans(&t, &[span(99, T0)])
            .expect("unflushed span");
    }
    // Damage a segment so that reopening quarantines it.
    let mut seen = Vec::new();
    walk(&root, &mut seen);
    let postings = seen
        .iter()
        .find(|(p, _, _)| p.ends_with("postings.bin") && p.to_string_lossy().contains("/spans/"))
        .map(|(p, _, _)| p.clone())
        .expect("a span segment");
    let mut bytes = std::fs::read(&postings).expect("read");
    bytes[12] ^= 0xff;
    std::fs::write(&postings, bytes).expect("damage");
    std::fs::set_permissions(&postings, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let store = Store::open(&root, config()).expect("reopen");
    assert_eq!(store.open_report().quarantined.len(), 1);
    drop(store);

    let mut all = Vec::new();
    walk(&root, &mut all);
    let has = |part: &str| {
        all.iter()
            .any(|(p, _, _)| p.to_string_lossy().contains(part))
    };
    for part in [
        "LOCK",
        "MANIFEST",
        ".wal",
        "data.parquet",
        "postings.bin",
        "meta.json",
    ] {
        assert!(has(part), "no {part} under {}", root.display());
    }
    assert!(has("/text.idx") && has("quarantine/"), "{all:?}");
    let root_mode = std::fs::metadata(&root).expect("root").permissions().mode() & 0o777;
    assert_eq!(root_mode, 0o700);
    for (path, mode, is_dir) in &all {
        assert_eq!(mode & 0o077, 0, "{} is {mode:o}", path.display());
        assert_eq!(
            *mode,
            if *is_dir { 0o700 } else { 0o600 },
            "{}",
            path.display()
        );
    }
}
