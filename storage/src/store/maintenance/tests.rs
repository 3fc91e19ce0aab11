use super::*;

fn cfg(min_segments: usize, target_rows: u64) -> CompactionConfig {
    CompactionConfig {
        enabled: true,
        min_segments,
        target_rows,
        max_merge_bytes: u64::MAX,
        sample_target_rows: target_rows,
        sample_merge_slice_rows: 1 << 20,
    }
}

fn cands(list: &[(u64, u32)]) -> Vec<Candidate> {
    list.iter()
        .enumerate()
        .map(|(i, &(rows, level))| Candidate {
            id: SegmentId(i as u64 + 1),
            rows,
            level,
            bytes: rows * 10,
        })
        .collect()
}

fn ids(v: &[u64]) -> Option<Vec<SegmentId>> {
    Some(v.iter().map(|&i| SegmentId(i)).collect())
}

#[test]
fn a_level_merges_once_it_has_min_segments() {
    let c = cfg(4, 1_000);
    assert_eq!(pick_merge(&cands(&[(10, 0), (10, 0), (10, 0)]), &c), None);
    assert_eq!(
        pick_merge(&cands(&[(10, 0), (12, 0), (11, 0), (10, 0)]), &c),
        ids(&[1, 4, 3, 2])
    );
}

#[test]
fn levels_do_not_mix() {
    let c = cfg(4, 1_000);
    // Three of each level: no level has four.
    let mixed = [(10, 0), (10, 0), (10, 0), (40, 1), (40, 1), (40, 1)];
    assert_eq!(pick_merge(&cands(&mixed), &c), None);
}

#[test]
fn the_lowest_full_level_goes_first() {
    let c = cfg(2, 1_000);
    let picked = pick_merge(&cands(&[(300, 1), (300, 1), (10, 0), (10, 0)]), &c);
    assert_eq!(picked, ids(&[3, 4]));
}

#[test]
fn one_merge_reads_at_most_target_rows() {
    let c = cfg(2, 100);
    // 40 + 40 fit, a third 40 would not.
    assert_eq!(
        pick_merge(&cands(&[(40, 0), (40, 0), (40, 0)]), &c),
        ids(&[1, 2])
    );
    // Two segments of 60 cannot pair within 100 rows: no merge.
    assert_eq!(pick_merge(&cands(&[(60, 0), (60, 0)]), &c), None);
    // The decoded bytes cap the input too (10 bytes per row here).
    let c = CompactionConfig {
        max_merge_bytes: 900,
        ..cfg(2, 1_000)
    };
    assert_eq!(
        pick_merge(&cands(&[(40, 0), (40, 0), (40, 0)]), &c),
        ids(&[1, 2])
    );
    // A full level whose segments do not all fit merges the ones that do.
    let c = cfg(4, 100);
    assert_eq!(
        pick_merge(&cands(&[(45, 1), (45, 1), (45, 1), (45, 1)]), &c),
        ids(&[1, 2])
    );
}

#[test]
fn rows_rewritten_grow_with_the_log_of_the_flushes() {
    // Simulate 256 flushes of 100 rows into one partition, compacting after each.
    let c = cfg(4, 1_000_000);
    let mut segs: Vec<Candidate> = Vec::new();
    let (mut next, mut written) = (1u64, 0u64);
    for _ in 0..256 {
        segs.push(Candidate {
            id: SegmentId(next),
            rows: 100,
            level: 0,
            bytes: 1_000,
        });
        next += 1;
        written += 100;
        while let Some(picked) = pick_merge(&segs, &c) {
            let merged: Vec<Candidate> = segs
                .iter()
                .filter(|s| picked.contains(&s.id))
                .copied()
                .collect();
            let rows: u64 = merged.iter().map(|s| s.rows).sum();
            let level = merged.iter().map(|s| s.level).max().unwrap_or(0) + 1;
            segs.retain(|s| !picked.contains(&s.id));
            segs.push(Candidate {
                id: SegmentId(next),
                rows,
                level,
                bytes: rows * 10,
            });
            next += 1;
            written += rows;
        }
    }
    let total: u64 = segs.iter().map(|s| s.rows).sum();
    assert_eq!(total, 25_600);
    // Flush once, then four levels of fan-in 4 (256 = 4^4): five writes per row.
    assert_eq!(written, 5 * 25_600);
    assert!(segs.len() <= 4, "{segs:?}");
}

mod with_a_store {
    use std::time::Duration;

    use crate::clock::ManualClock;
    use crate::model::SpanRecord;
    use crate::types::{SpanId, TraceId};
    use crate::{Store, StoreConfig};

    use super::*;

    const T0: i64 = 1_764_000_000_000_000_000;
    const HOUR: i64 = 3_600_000_000_000;

    fn store_with_segments(dir: &std::path::Path, clock: Arc<ManualClock>, n: u64) -> Store {
        let mut cfg = StoreConfig {
            background: false,
            clock,
            ..StoreConfig::default()
        };
        cfg.retention.default_ttl = Some(Duration::from_secs(3600));
        let store = Store::open(dir, cfg).expect("open");
        let tenant = TenantId::new("acme").expect("tenant");
        for c in 0..n {
            let spans: Vec<SpanRecord> = (0..10u64)
                .map(|i| {
                    let t = T0 + (c * 10 + i) as i64 * 1_000_000;
                    SpanRecord::new(
                        TraceId([c as u8 + 1; 16]),
                        SpanId((i + 1).to_be_bytes()),
                        "svc",
                        "op",
                        UnixNanos(t),
                        UnixNanos(t + 1_000),
                    )
                })
                .collect();
            store.append_spans(&tenant, &spans).expect("append");
            store.flush().expect("flush");
        }
        store
    }

    fn segment_dirs(root: &std::path::Path) -> usize {
        fn walk(p: &std::path::Path, depth: usize) -> usize {
            let entries = std::fs::read_dir(p).into_iter().flatten().flatten();
            if depth == 0 {
                return entries.count();
            }
            entries.map(|e| walk(&e.path(), depth - 1)).sum()
        }
        // data/<tenant>/<signal>/<partition>/<segment>
        walk(&root.join("data"), 3)
    }

    #[test]
    fn a_merge_whose_inputs_retention_dropped_is_abandoned() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(ManualClock::new(UnixNanos(T0)));
        let store = store_with_segments(dir.path(), clock.clone(), 4);
        let inner = &store.inner;
        let segs = inner.live_segments();
        assert_eq!(segs.len(), 4);
        // Retention drops the partition after the merge read its inputs, before it commits.
        clock.advance(3 * HOUR);
        assert_eq!(apply_retention(inner).expect("retention"), 4);
        let m = segs[0].meta().clone();
        let merged = merge(inner, &m.tenant, m.signal, m.partition_start, &segs).expect("merge");
        assert!(!merged, "a merge of dropped segments must not commit");
        assert!(store.segments().is_empty(), "{:?}", store.segments());
        assert_eq!(store.stats().compactions, 0);
        drop(segs);
        assert_eq!(
            segment_dirs(dir.path()),
            0,
            "the abandoned merge left files"
        );
        drop(store);
        let store = Store::open(dir.path(), StoreConfig::default()).expect("reopen");
        assert!(store.open_report().removed_leftovers.is_empty());
        assert!(store.segments().is_empty());
    }

    #[test]
    fn flushed_and_merged_segments_hold_their_rollups_in_the_cache() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(ManualClock::new(UnixNanos(T0)));
        let store = store_with_segments(dir.path(), clock, 4);
        let cached = |store: &Store| -> Vec<bool> {
            let state = store.inner.state.lock();
            let segs = state.segments.values().flatten();
            segs.map(|s| s.has_rollup_cached()).collect()
        };
        assert_eq!(cached(&store), vec![true; 4], "flushed segments");
        assert_eq!(compact(&store.inner).expect("compact"), 1);
        assert_eq!(cached(&store), vec![true], "merged segment");
    }

    #[test]
    fn a_flush_does_not_wait_for_a_compaction_pass() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(ManualClock::new(UnixNanos(T0)));
        let store = Arc::new(store_with_segments(dir.path(), clock, 1));
        // A compaction pass is under way (it holds its lock for the whole pass).
        let pass = store.inner.compacting.lock();
        let (tx, rx) = std::sync::mpsc::channel();
        let s = store.clone();
        std::thread::spawn(move || {
            let tenant = TenantId::new("acme").expect("tenant");
            let span = SpanRecord::new(
                TraceId([9; 16]),
                SpanId([1; 8]),
                "svc",
                "op",
                UnixNanos(T0),
                UnixNanos(T0 + 1),
            );
            s.append_spans(&tenant, &[span]).expect("append");
            let _ = tx.send(s.flush().map(|()| s.segments().len()));
        });
        let flushed = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("flush blocked behind compaction");
        assert_eq!(flushed.expect("flush"), 2);
        drop(pass);
    }
}
