//! Scans stop once their deadline passes or their request is cancelled, and a deadline that
//! never expires changes nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sightline_storage::{
    Deadline, Matcher, MetricKind, Predicate, ScanRequest, SeriesDef, Signal, SpanRecord,
    StorageError, Store, TimeRange,
};

use super::{HOUR, T0, config, log, metric_batch, span, tenant};

/// Four flushed segments of spans in different partitions, plus unflushed spans, logs and
/// samples.
fn store_with_segments(dir: &std::path::Path, per_segment: u64) -> Store {
    let mut cfg = config();
    cfg.segment.row_group_rows = 2048;
    cfg.scan_threads = 2;
    let store = Store::open(dir, cfg).expect("open");
    let t = tenant("acme");
    for s in 0..4u64 {
        let spans: Vec<SpanRecord> = (0..per_segment)
            .map(|i| span(s * per_segment + i, T0 + s as i64 * HOUR + i as i64 * 1000))
            .collect();
        store.append_spans(&t, &spans).expect("append");
        store.flush().expect("flush");
    }
    store
        .append_spans(&t, &[span(9_999_999, T0 + 5 * HOUR)])
        .expect("append");
    store
        .append_logs(
            &t,
            &(0..50).map(|n| log(n, T0 + n as i64)).collect::<Vec<_>>(),
        )
        .expect("append logs");
    let series = vec![SeriesDef::new(
        "tokens",
        MetricKind::Counter,
        vec![("model".into(), "a".into())],
    )];
    store
        .append_metrics(&t, &metric_batch(&series, T0 / 1_000_000, 100))
        .expect("append metrics");
    store
}

fn requests() -> Vec<ScanRequest> {
    let t = tenant("acme");
    vec![
        ScanRequest::new(t.clone(), Signal::Spans, TimeRange::ALL),
        ScanRequest::new(t.clone(), Signal::Spans, TimeRange::ALL)
            .with(Predicate::Attr(Matcher::eq("service.name", "gateway"))),
        ScanRequest::new(t.clone(), Signal::Logs, TimeRange::ALL)
            .with(Predicate::FullText("timeout".into())),
        ScanRequest::new(t, Signal::Samples, TimeRange::ALL)
            .with(Predicate::Attr(Matcher::eq("model", "a"))),
    ]
}

#[test]
fn an_expired_deadline_stops_every_scan() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_with_segments(dir.path(), 5_000);
    assert_eq!(store.segments().len(), 4);
    let past = Deadline::at(Instant::now() - Duration::from_millis(1));
    let cancelled = Deadline::none().with_cancel(Arc::new(AtomicBool::new(true)));
    for req in requests() {
        for d in [past.clone(), cancelled.clone()] {
            let err = store
                .scan(&req.clone().until(d))
                .expect_err("deadline passed");
            assert!(matches!(err, StorageError::DeadlineExceeded), "{err:?}");
        }
    }
}

#[test]
fn a_deadline_that_does_not_expire_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_with_segments(dir.path(), 5_000);
    for req in requests() {
        assert_eq!(req.deadline.instant(), None, "new() never expires");
        let plain = store.scan(&req).expect("scan");
        let later = store
            .scan(
                &req.clone()
                    .until(Deadline::after(Duration::from_secs(3600))),
            )
            .expect("scan");
        assert!(plain.num_rows() > 0, "{:?}", req.signal);
        assert_eq!(plain.batches, later.batches);
        assert_eq!(plain.stats.rows_returned, later.stats.rows_returned);
        assert_eq!(plain.stats.row_groups_read, later.stats.row_groups_read);
    }
}

/// A cancel flag set by another thread while the scan reads stops it early. The flag is set a
/// quarter of the way through a scan whose full length was just measured; should that scan
/// finish early anyway (a busy machine), the attempt is repeated.
#[test]
fn cancelling_from_another_thread_stops_a_running_scan() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_with_segments(dir.path(), 40_000);
    let req = ScanRequest::new(tenant("acme"), Signal::Spans, TimeRange::ALL);
    let mut stopped = false;
    for _ in 0..5 {
        let t = Instant::now();
        let full = store.scan(&req).expect("scan");
        let took = t.elapsed();
        assert_eq!(full.num_rows(), 160_001);
        let flag = Arc::new(AtomicBool::new(false));
        let setter = {
            let flag = flag.clone();
            std::thread::spawn(move || {
                std::thread::sleep(took / 4);
                flag.store(true, Ordering::Relaxed);
                Instant::now()
            })
        };
        let res = store.scan(&req.clone().until(Deadline::none().with_cancel(flag)));
        let returned = Instant::now();
        let set_at = setter.join().expect("setter");
        match res {
            Err(StorageError::DeadlineExceeded) => {
                // It stopped at the next check, well before a full scan's time had passed.
                assert!(
                    returned.saturating_duration_since(set_at) < took,
                    "stopped {:?} after the flag, a full scan takes {took:?}",
                    returned.saturating_duration_since(set_at)
                );
                stopped = true;
                break;
            }
            Ok(r) => assert_eq!(r.num_rows(), 160_001, "a scan that finished is complete"),
            Err(e) => panic!("{e:?}"),
        }
    }
    assert!(stopped, "the scan never saw the cancel flag");
}
