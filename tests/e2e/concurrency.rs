//! Concurrency: writers, readers, background and explicit flushes and compactions in one process.
//!
//! Every batch spans two time partitions (even rows in one hour, odd rows in the next), so a
//! flush writes it into two segments and compaction merges those separately. Readers check, on
//! every scan:
//! - no partial or duplicated batch: every batch seen is seen with each row exactly once;
//! - read-your-acknowledged-writes: every batch acknowledged before the scan started is in it;
//! - nothing goes backwards: the set of batches seen only grows from one scan to the next;
//! - a predicate selecting whole batches (a regex on an integer attribute, served by postings
//!   on segments and by exact filtering on memtables) keeps all of the above.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use sightline_e2e::{HOUR_NANOS, batch_id, span_of, tenant};
use sightline_storage::schema::col;
use sightline_storage::{
    CompactionConfig, MatchOp, Matcher, Predicate, ScanRequest, SegmentWriteOptions, Signal,
    SpanRecord, Store, StoreConfig, TimeRange,
};

use crate::common::Census;

const WRITERS: u8 = 3;
const READERS: usize = 2;
const BATCHES_PER_WRITER: u32 = 150;
const BATCH_ROWS: u32 = 12;
/// Upper bound on the whole test, so a hang fails instead of stalling CI.
const TIME_LIMIT: Duration = Duration::from_secs(60);

fn config() -> StoreConfig {
    StoreConfig {
        background: true,
        flush_threshold_bytes: 96 * 1024,
        flush_interval: Duration::from_millis(50),
        wal_file_bytes: 64 * 1024,
        compaction: CompactionConfig {
            enabled: true,
            min_segments: 2,
            target_rows: 1_000_000,
            ..CompactionConfig::default()
        },
        segment: SegmentWriteOptions {
            row_group_rows: 256,
            page_rows: 64,
            ..SegmentWriteOptions::default()
        },
        ..StoreConfig::default()
    }
}

/// A batch whose odd rows start one hour after its even rows.
fn two_partition_batch(id: u64) -> Vec<SpanRecord> {
    (0..BATCH_ROWS)
        .map(|row| {
            let mut s = span_of(id, row);
            if row % 2 == 1 {
                s.start = s.start.saturating_add(HOUR_NANOS);
                s.end = s.end.saturating_add(HOUR_NANOS);
            }
            s
        })
        .collect()
}

fn acked_snapshot(acked: &Mutex<BTreeSet<u64>>) -> BTreeSet<u64> {
    acked.lock().expect("acked set lock").clone()
}

/// One reader's loop; returns how many scans it checked.
fn reader(store: &Store, acked: &Mutex<BTreeSet<u64>>, done: &AtomicBool, seed: u64) -> usize {
    let t = tenant("concurrency");
    let even_ids = Matcher::new("batch.id", MatchOp::Regex, "[0-9]*[02468]").expect("regex");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut seen_all: BTreeSet<u64> = BTreeSet::new();
    let mut seen_even: BTreeSet<u64> = BTreeSet::new();
    let mut scans = 0;
    while !done.load(Ordering::Acquire) {
        let before = acked_snapshot(acked);
        let whole = rng.random_bool(0.6);
        let mut req =
            ScanRequest::new(t.clone(), Signal::Spans, TimeRange::ALL).project(&[col::TRACE_ID]);
        if !whole {
            req = req.with(Predicate::Attr(even_ids.clone()));
        }
        let census = Census::of(&store.scan(&req).expect("scan"), BATCH_ROWS);
        scans += 1;
        assert_eq!(census.foreign_rows, 0);
        let broken = census.broken();
        assert!(
            broken.is_empty(),
            "scan {scans} saw partial or duplicated batches (row counts): {:?}",
            &broken[..broken.len().min(5)]
        );
        let ids: BTreeSet<u64> = census.batches.keys().copied().collect();
        let (expect, previous) = if whole {
            (before, &mut seen_all)
        } else {
            assert!(
                ids.iter().all(|id| id % 2 == 0),
                "the even-id predicate returned odd batches"
            );
            (
                before.into_iter().filter(|id| id % 2 == 0).collect(),
                &mut seen_even,
            )
        };
        let missing: Vec<u64> = expect.difference(&ids).copied().collect();
        assert!(
            missing.is_empty(),
            "scan {scans} misses {} batches acknowledged before it started, e.g. {:?}",
            missing.len(),
            &missing[..missing.len().min(5)]
        );
        let gone: Vec<u64> = previous.difference(&ids).copied().collect();
        assert!(
            gone.is_empty(),
            "scan {scans} lost {} batches an earlier scan saw, e.g. {:?}",
            gone.len(),
            &gone[..gone.len().min(5)]
        );
        *previous = ids;
    }
    scans
}

#[test]
fn readers_never_see_partial_batches_or_lose_rows_during_flush_and_compaction() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("concurrency");
    let store = Store::open(dir.path(), config()).expect("open");
    let acked: Mutex<BTreeSet<u64>> = Mutex::new(BTreeSet::new());
    let writers_left = AtomicUsize::new(usize::from(WRITERS));
    let done = AtomicBool::new(false);
    let started = Instant::now();
    let deadline = started + TIME_LIMIT;
    let explicit = AtomicUsize::new(0);

    let scans: Vec<usize> = std::thread::scope(|s| {
        for w in 0..WRITERS {
            let (store, acked, t, writers_left, done) = (&store, &acked, &t, &writers_left, &done);
            s.spawn(move || {
                for seq in 0..BATCHES_PER_WRITER {
                    assert!(
                        Instant::now() < deadline,
                        "writers did not finish in {TIME_LIMIT:?}"
                    );
                    let id = batch_id(1, w, seq);
                    store
                        .append_spans(t, &two_partition_batch(id))
                        .expect("append");
                    acked.lock().expect("acked set lock").insert(id);
                }
                if writers_left.fetch_sub(1, Ordering::AcqRel) == 1 {
                    done.store(true, Ordering::Release);
                }
            });
        }
        {
            let (store, done, explicit) = (&store, &done, &explicit);
            s.spawn(move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(7);
                while !done.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(rng.random_range(0..20)));
                    if rng.random_bool(0.5) {
                        store.flush().expect("explicit flush");
                    } else {
                        store.compact().expect("explicit compaction");
                    }
                    explicit.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let readers: Vec<_> = (0..READERS)
            .map(|r| {
                let (store, acked, done) = (&store, &acked, &done);
                s.spawn(move || reader(store, acked, done, r as u64))
            })
            .collect();
        readers
            .into_iter()
            .map(|h| h.join().expect("reader panicked"))
            .collect()
    });

    let stats = store.stats();
    println!(
        "concurrency: {:.1} s, scans per reader {scans:?}, {} flushes, {} compactions, {} \
         explicit maintenance calls, {} live segments",
        started.elapsed().as_secs_f64(),
        stats.flushes,
        stats.compactions,
        explicit.load(Ordering::Relaxed),
        stats.segments
    );
    assert!(
        scans.iter().all(|&n| n >= 5),
        "readers barely ran: {scans:?}"
    );
    assert!(
        stats.flushes >= 3,
        "too few flushes to test anything: {stats:?}"
    );
    assert!(stats.compactions >= 1, "no compaction ran: {stats:?}");

    // After close and reopen, exactly the acknowledged batches, once each, with their content.
    store.close().expect("close");
    drop(store);
    let store = Store::open(dir.path(), config()).expect("reopen");
    let census = Census::scan(&store, &t, BATCH_ROWS);
    assert!(census.broken().is_empty());
    let ids: BTreeSet<u64> = census.batches.keys().copied().collect();
    let expect = acked_snapshot(&acked);
    assert_eq!(
        ids.len(),
        usize::from(WRITERS) * BATCHES_PER_WRITER as usize
    );
    assert_eq!(ids, expect);
    let mut spans = crate::common::all_spans(&store, &t);
    let mut want: Vec<SpanRecord> = expect
        .iter()
        .flat_map(|id| two_partition_batch(*id))
        .collect();
    spans.sort_by_key(|s| s.trace_id);
    want.sort_by_key(|s| s.trace_id);
    assert!(spans == want, "rows read back differ from rows written");
}
