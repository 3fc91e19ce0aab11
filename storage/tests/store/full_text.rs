//! Full-text search through the store: phrases checked against bodies in memtables, segments
//! and merged segments (also when the body is not among the columns asked for), and log
//! segments written before token indexes, searched by reading their bodies.

use sightline_storage::columnar::logs_from_batch;
use sightline_storage::manifest::Manifest;
use sightline_storage::model::AttrValue;
use sightline_storage::text_index::TEXT_INDEX_FILE;
use sightline_storage::{LogRecord, Predicate, ScanRequest, Signal, Store, TimeRange};

use super::{T0, config, log, tenant};

/// Lines whose words come in either order, so that the rows holding a phrase's words are more
/// than the rows holding the phrase.
fn lines(n: u64) -> Vec<LogRecord> {
    (0..n)
        .map(|i| {
            let mut l = log(i, T0 + i as i64 * 1_000_000);
            l.body = AttrValue::Str(match i % 4 {
                0 => format!("Tool call failed after {i} ms"),
                1 => format!("call tool failed after {i} ms"),
                2 => format!("tool retry call {i}"),
                _ => format!("tool-call ok {i}"),
            });
            l
        })
        .collect()
}

fn count(store: &Store, q: &str, projection: Option<&[&str]>) -> usize {
    let mut req = ScanRequest::new(tenant("acme"), Signal::Logs, TimeRange::ALL)
        .with(Predicate::FullText(q.into()));
    if let Some(p) = projection {
        req = req.project(p);
    }
    let res = store.scan(&req).expect("scan");
    if projection.is_none() {
        // Every returned line really matches.
        for b in &res.batches {
            for l in logs_from_batch(b).expect("decode") {
                let AttrValue::Str(body) = &l.body else {
                    panic!("string body")
                };
                let lower = body.to_lowercase();
                if q == "\"tool call\"" {
                    assert!(
                        lower.contains("tool call") || lower.contains("tool-call"),
                        "{body}"
                    );
                }
            }
        }
    }
    res.batches.iter().map(|b| b.num_rows()).sum()
}

/// The expected count of each query over `n` lines of [`lines`].
fn expected(q: &str, n: u64) -> usize {
    (0..n)
        .filter(|i| match q {
            // "tool call" as adjacent tokens: "Tool call failed" and "tool-call ok".
            "\"tool call\"" => i % 4 == 0 || i % 4 == 3,
            "\"tool call\"~1" => i % 4 != 1,
            "tool call" => true,
            "failed -\"call tool\"" => i % 4 == 0,
            "\"call fail\"*" => i % 4 == 0,
            other => panic!("no expectation for {other}"),
        })
        .count()
}

const QUERIES: &[&str] = &[
    "\"tool call\"",
    "\"tool call\"~1",
    "tool call",
    "failed -\"call tool\"",
    "\"call fail\"*",
];

fn check_all(store: &Store, n: u64, when: &str) {
    for q in QUERIES {
        let want = expected(q, n);
        assert_eq!(count(store, q, None), want, "{q} ({when})");
        // A count reads no column, yet the phrase is still checked against the bodies.
        assert_eq!(count(store, q, Some(&[])), want, "{q} ({when}, count)");
    }
}

#[test]
fn phrases_are_checked_against_bodies_everywhere() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("acme");
    let store = Store::open(dir.path(), config()).expect("open");
    let logs = lines(4_000);
    store.append_logs(&t, &logs[..1_000]).expect("append");
    check_all(&store, 1_000, "memtable");
    store.flush().expect("flush");
    store.append_logs(&t, &logs[1_000..2_000]).expect("append");
    check_all(&store, 2_000, "segment and memtable");
    store.flush().expect("flush");
    store.append_logs(&t, &logs[2_000..]).expect("append");
    store.flush().expect("flush");
    store.compact().expect("compact");
    check_all(&store, 4_000, "merged segments");
}

#[test]
fn log_segments_without_a_token_index_are_searched_by_their_bodies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("acme");
    let logs = lines(3_000);
    {
        let store = Store::open(dir.path(), config()).expect("open");
        store.append_logs(&t, &logs[..2_000]).expect("append");
        store.flush().expect("flush");
    }
    // Make the segment look like one written before token indexes: no text.idx, and no
    // manifest entry for it.
    let mut m = Manifest::load(dir.path()).expect("load").expect("manifest");
    let mut removed = 0;
    for seg in m.segments.iter_mut().filter(|s| s.signal == Signal::Logs) {
        seg.files.retain(|f| f.name != TEXT_INDEX_FILE);
        let seg_dir = dir.path().join(seg.relative_dir());
        std::fs::remove_file(seg_dir.join(TEXT_INDEX_FILE)).expect("remove");
        // The segment's own copy of its meta says the same.
        let meta = serde_json::to_vec(&*seg).expect("meta");
        std::fs::write(seg_dir.join("meta.json"), meta).expect("meta");
        removed += 1;
    }
    assert_eq!(removed, 1);
    m.store(dir.path()).expect("store manifest");
    let store = Store::open(dir.path(), config()).expect("reopen");
    assert!(store.open_report().quarantined.is_empty());
    check_all(&store, 2_000, "segment without token index");
    store.append_logs(&t, &logs[2_000..]).expect("append");
    store.flush().expect("flush");
    check_all(&store, 3_000, "old and new segments");
    store.compact().expect("compact");
    check_all(&store, 3_000, "after compaction");
}

#[test]
fn searching_unflushed_lines_charges_their_index_to_the_memory_budget_until_the_flush() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("acme");
    let store = Store::open(dir.path(), config()).expect("open");
    store.append_logs(&t, &lines(2_000)).expect("append");
    let before = store.stats().memtable_bytes;
    assert_eq!(count(&store, "failed", Some(&[])), 1_000);
    let searched = store.stats().memtable_bytes;
    assert!(
        searched > before,
        "the in-memory token index is in the budget: {before} -> {searched}"
    );
    assert_eq!(count(&store, "retry", Some(&[])), 500);
    assert_eq!(store.stats().memtable_bytes, searched, "built once");
    store.flush().expect("flush");
    assert_eq!(
        store.stats().memtable_bytes,
        0,
        "the flush gives it all back"
    );
    assert_eq!(count(&store, "failed", Some(&[])), 1_000);
}
