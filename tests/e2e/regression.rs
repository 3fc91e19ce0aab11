//! Regression tests, one per storage bug found by the other e2e tests, each named after the bug.
//! Each asserts the correct behaviour, so it fails while the bug is present.

use std::sync::Arc;
use std::time::Duration;

use sightline_e2e::{HOUR_NANOS, T0_NANOS, batch_id, span_of, tenant};
use sightline_storage::model::AttrValue;
use sightline_storage::schema::col;
use sightline_storage::{
    ManualClock, MetricBatch, MetricKind, Predicate, Sample, ScanRequest, SeriesDef, Signal,
    SpanRecord, StorageError, Store, StoreConfig, TenantId, TimeRange, UnixNanos,
};

use crate::common::{all_spans, decode_spans};

fn config() -> StoreConfig {
    StoreConfig {
        background: false,
        ..StoreConfig::default()
    }
}

fn spans_matching(store: &Store, t: &TenantId, preds: Vec<Predicate>) -> Vec<SpanRecord> {
    let mut req = ScanRequest::new(t.clone(), Signal::Spans, TimeRange::ALL);
    req.predicates = preds;
    decode_spans(&store.scan(&req).expect("scan"))
}

/// Found by the model test: `CompiledScan::trace_id` (storage/src/segment/scan.rs:117) uses
/// `find_map`, so only the first `Predicate::TraceId` of a request is evaluated; the others are
/// silently dropped, although a request's predicates must all hold. Two different trace ids
/// must select nothing.
#[test]
fn second_trace_id_predicate_is_ignored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("acme");
    let store = Store::open(dir.path(), config()).expect("open");
    let (a, b) = (span_of(batch_id(1, 0, 0), 0), span_of(batch_id(1, 0, 0), 1));
    store
        .append_spans(&t, &[a.clone(), b.clone()])
        .expect("append");
    let both = || {
        vec![
            Predicate::TraceId(a.trace_id),
            Predicate::TraceId(b.trace_id),
        ]
    };
    assert_eq!(spans_matching(&store, &t, both()), vec![], "unflushed rows");
    store.flush().expect("flush");
    assert_eq!(
        spans_matching(&store, &t, both()),
        vec![],
        "rows in a segment"
    );
}

fn sample_rows(store: &Store, t: &TenantId, projection: Option<&[&str]>) -> usize {
    let mut req = ScanRequest::new(t.clone(), Signal::Samples, TimeRange::ALL);
    if let Some(p) = projection {
        req = req.project(p);
    }
    store.scan(&req).expect("scan").num_rows()
}

fn same_point_twice() -> MetricBatch {
    let s = SeriesDef::new("llm_latency_seconds", MetricKind::Gauge, vec![]);
    let ms = T0_NANOS / 1_000_000;
    MetricBatch {
        series: vec![s.clone()],
        samples: vec![
            Sample {
                series: s.id,
                timestamp_ms: ms,
                value: 1.0,
            },
            Sample {
                series: s.id,
                timestamp_ms: ms,
                value: 2.0,
            },
        ],
    }
}

/// `scan` (storage/src/store/scan.rs:133, `dedupe_samples` call) merges samples sharing (series,
/// timestamp) only when the result has more than one batch. One append holding the same point
/// twice is one memtable batch: it is returned twice until a flush, after which the segment
/// writer keeps only the last value. The answer must not depend on flush timing.
#[test]
fn duplicate_samples_in_one_append_are_returned_twice_until_flush() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("acme");
    let store = Store::open(dir.path(), config()).expect("open");
    store
        .append_metrics(&t, &same_point_twice())
        .expect("append");
    let before = sample_rows(&store, &t, None);
    store.flush().expect("flush");
    let after = sample_rows(&store, &t, None);
    assert_eq!(
        after, 1,
        "the segment keeps one value per series and timestamp"
    );
    assert_eq!(before, after, "rows before flush vs after flush");
}

/// `dedupe_samples` (storage/src/store/scan.rs:147-151) returns early when the projection lacks
/// `series_id`, `timestamp` or `value`, so a projected scan returns duplicates that the full scan
/// of the same data removes: the row count depends on the projection.
#[test]
fn projected_sample_scans_return_duplicates_that_full_scans_remove() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("acme");
    let store = Store::open(dir.path(), config()).expect("open");
    let batch = same_point_twice();
    store.append_metrics(&t, &batch).expect("append");
    store.flush().expect("flush");
    // A client retry of the same point lands in a second segment.
    store.append_metrics(&t, &batch).expect("append");
    store.flush().expect("flush");
    let full = sample_rows(&store, &t, None);
    assert_eq!(full, 1);
    for projection in [&[col::VALUE][..], &[col::TIMESTAMP, col::VALUE]] {
        assert_eq!(
            sample_rows(&store, &t, Some(projection)),
            full,
            "{projection:?}"
        );
    }
}

/// `partition_rows` (storage/src/store/flush.rs:34) computes
/// `t.saturating_mul(unit).div_euclid(p) * p`, which overflows for times in the partial partition
/// just above `i64::MIN` (and for sample timestamps below about -9.2e12 ms, which saturate
/// there). Appends accept such rows, then every flush panics in debug builds (wraps to a bogus
/// partition in release) and the row is replayed from the WAL after a restart: a poison pill
/// that stops all flushing. The store must either refuse the row or store it.
#[test]
fn flush_overflows_on_timestamps_near_i64_min() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("acme");
    let mut span = span_of(batch_id(1, 0, 0), 0);
    span.start = UnixNanos(i64::MIN);
    span.end = UnixNanos(i64::MIN + 1_000);
    let store = Store::open(dir.path(), config()).expect("open");
    match store.append_spans(&t, std::slice::from_ref(&span)) {
        Err(StorageError::InvalidInput(_)) => {
            assert!(
                all_spans(&store, &t).is_empty(),
                "a refused append wrote nothing"
            );
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(()) => {
            let flushed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| store.flush()));
            assert!(
                matches!(flushed, Ok(Ok(()))),
                "flush of an accepted row failed or panicked: {flushed:?}"
            );
            assert_eq!(all_spans(&store, &t), vec![span]);
            for m in store.segments() {
                assert!(
                    m.partition_start <= m.min_time && m.max_time < m.partition_end(),
                    "rows outside their segment's partition: {m:?}"
                );
            }
        }
    }
}

/// Compaction (storage/src/store/maintenance.rs:18 `PartitionKey` = tenant, signal, partition
/// start; :76 takes `partition_nanos` of the oldest input) merges segments that share a partition
/// start but have different partition lengths, as after `partition_duration` (or the new
/// `sample_partition_duration` default, hourly to daily) changed between opens. Retention then
/// judges the merged rows by the shorter partition and drops rows still inside their TTL.
#[test]
fn compaction_merges_partitions_of_different_lengths_and_retention_drops_live_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("acme");
    // Now: T0 + 2h05m; TTL 1h: partitions ending at or before T0 + 1h05m expire.
    let clock = Arc::new(ManualClock::new(UnixNanos(
        T0_NANOS + 2 * HOUR_NANOS + HOUR_NANOS / 12,
    )));
    let cfg = |hours: u64| {
        let mut c = config();
        c.partition_duration = Duration::from_secs(hours * 3600);
        c.clock = clock.clone();
        c.retention.default_ttl = Some(Duration::from_secs(3600));
        c.compaction.min_segments = 2;
        c
    };
    let at = |seq: u32, nanos: i64| {
        let mut s = span_of(batch_id(1, 0, seq), 0);
        s.start = UnixNanos(nanos);
        s.end = UnixNanos(nanos + 1_000);
        s
    };
    let expired = at(0, T0_NANOS + HOUR_NANOS / 2); // 1 h partition [T0, T0+1h): expired
    let live = at(1, T0_NANOS + 3 * HOUR_NANOS / 2); // 2 h partition [T0, T0+2h): live
    {
        let store = Store::open(dir.path(), cfg(1)).expect("open with 1 h partitions");
        store
            .append_spans(&t, std::slice::from_ref(&expired))
            .expect("append");
        store.flush().expect("flush");
    }
    let store = Store::open(dir.path(), cfg(2)).expect("open with 2 h partitions");
    store
        .append_spans(&t, std::slice::from_ref(&live))
        .expect("append");
    store.flush().expect("flush");
    store.compact().expect("compact");
    store.apply_retention().expect("retention");
    assert_eq!(
        all_spans(&store, &t),
        vec![live],
        "rows left after retention"
    );
}

/// Nested attribute values (arrays and key-value lists) are stored as JSON text
/// (storage/src/model.rs `AttrValue::to_json`, storage/src/columnar/decode.rs `json_to_attr`),
/// which is lossy: key-value lists come back with keys sorted (serde_json's map is a BTreeMap),
/// nested bytes come back as hex strings, and non-finite doubles as strings. A span read back
/// must equal the span written.
#[test]
fn nested_attribute_values_do_not_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("acme");
    let store = Store::open(dir.path(), config()).expect("open");
    let mut span = span_of(batch_id(1, 0, 0), 0);
    span.attributes.push((
        "tool.arguments".into(),
        AttrValue::KvList(vec![
            ("query".into(), AttrValue::Str("weather".into())),
            ("limit".into(), AttrValue::Int(3)),
        ]),
    ));
    span.attributes.push((
        "chunks".into(),
        AttrValue::Array(vec![
            AttrValue::Bytes(vec![0xde, 0xad]),
            AttrValue::Double(f64::INFINITY),
        ]),
    ));
    store
        .append_spans(&t, std::slice::from_ref(&span))
        .expect("append");
    let got = all_spans(&store, &t);
    let attrs = |s: &SpanRecord| s.attributes[3..].to_vec();
    assert_eq!(
        got.iter().map(attrs).collect::<Vec<_>>(),
        vec![attrs(&span)]
    );
}
