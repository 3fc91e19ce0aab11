//! Store-level behaviour: visibility before and after flush, reopen, pruning, compaction,
//! retention, corruption and bad input.

use std::sync::Arc;
use std::time::Duration;

use sightline_storage::columnar::{logs_from_batch, spans_from_batch};
use sightline_storage::model::AttrValue;
use sightline_storage::schema::col;
use sightline_storage::{
    FsyncPolicy, LogRecord, ManualClock, MatchOp, Matcher, MetricBatch, MetricKind, Predicate,
    Sample, ScanRequest, SeriesDef, Signal, SpanId, SpanRecord, StatusCode, Store, StoreConfig,
    TenantId, TimeRange, TraceId, UnixNanos,
};

#[path = "store/any_of.rs"]
mod any_of;
#[path = "store/deadline.rs"]
mod deadline;
#[path = "store/dictionary.rs"]
mod dictionary;
#[path = "store/file_modes.rs"]
mod file_modes;
#[path = "store/full_text.rs"]
mod full_text;
#[path = "store/index_policy.rs"]
mod index_policy;
#[path = "store/rollup_keys.rs"]
mod rollup_keys;
#[path = "store/sample_compaction.rs"]
mod sample_compaction;

const HOUR: i64 = 3_600_000_000_000;
const T0: i64 = 1_795_960_800_000_000_000; // 2026-11-29T14:00Z

fn config() -> StoreConfig {
    StoreConfig {
        background: false,
        fsync: FsyncPolicy::Always,
        ..StoreConfig::default()
    }
}

fn tenant(s: &str) -> TenantId {
    TenantId::new(s).expect("tenant")
}

fn trace_id(n: u64) -> TraceId {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&n.to_be_bytes());
    b[15] = 1;
    TraceId(b)
}

fn span(n: u64, t: i64) -> SpanRecord {
    let mut s = SpanRecord::new(
        trace_id(n / 4),
        SpanId((n + 1).to_be_bytes()),
        if n.is_multiple_of(3) {
            "gateway"
        } else {
            "retriever"
        },
        format!("op-{}", n % 5),
        UnixNanos(t),
        UnixNanos(t + 1_000_000 * (n as i64 % 97 + 1)),
    );
    s.status_code = if n.is_multiple_of(10) {
        StatusCode::Error
    } else {
        StatusCode::Ok
    };
    s.gen_ai.request_model = Some(
        if n.is_multiple_of(2) {
            "gpt-4o"
        } else {
            "claude-3"
        }
        .into(),
    );
    s.gen_ai.input_tokens = Some(n as i64 * 3);
    s.attributes = vec![
        ("user.id".into(), AttrValue::Str(format!("u{}", n % 7))),
        ("retry".into(), AttrValue::Int((n % 2) as i64)),
        (
            "tags".into(),
            AttrValue::Array(vec![AttrValue::Str("a".into()), AttrValue::Int(1)]),
        ),
    ];
    s.resource_attributes = vec![(
        "deployment.environment".into(),
        AttrValue::Str("prod".into()),
    )];
    if !n.is_multiple_of(4) {
        s.parent_span_id = Some(SpanId((n - n % 4 + 1).to_be_bytes()));
    }
    s
}

fn log(n: u64, t: i64) -> LogRecord {
    LogRecord {
        time: UnixNanos(t),
        observed_time: UnixNanos(t + 5),
        severity_number: if n.is_multiple_of(5) { 17 } else { 9 },
        severity_text: if n.is_multiple_of(5) { "ERROR" } else { "INFO" }.into(),
        body: if n.is_multiple_of(5) {
            AttrValue::Str(format!("tool call failed after timeout, request {n}"))
        } else {
            AttrValue::Str(format!("retrieved {} documents for request {n}", n % 9))
        },
        trace_id: Some(trace_id(n / 4)),
        span_id: None,
        flags: 0,
        service_name: "gateway".into(),
        scope_name: "app".into(),
        event_name: String::new(),
        resource_attributes: vec![],
        attributes: vec![("user.id".into(), AttrValue::Str(format!("u{}", n % 7)))],
    }
}

fn spans_matching(store: &Store, t: &TenantId, preds: Vec<Predicate>) -> usize {
    let mut req = ScanRequest::new(t.clone(), Signal::Spans, TimeRange::ALL);
    req.predicates = preds;
    store.scan(&req).expect("scan").num_rows()
}

#[test]
fn spans_visible_before_and_after_flush_and_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("acme");
    let spans: Vec<SpanRecord> = (0..400)
        .map(|n| span(n, T0 + n as i64 * 1_000_000_000))
        .collect();
    {
        let store = Store::open(dir.path(), config()).expect("open");
        store.append_spans(&t, &spans[..200]).expect("append");
        assert_eq!(spans_matching(&store, &t, vec![]), 200);
        store.flush().expect("flush");
        store.append_spans(&t, &spans[200..]).expect("append");
        assert_eq!(spans_matching(&store, &t, vec![]), 400);
        let one = store.trace(&t, trace_id(10)).expect("trace");
        assert_eq!(one.len(), 4);
        let mut expect: Vec<SpanRecord> = spans[40..44].to_vec();
        let mut got = one;
        got.sort_by_key(|s| s.span_id);
        expect.sort_by_key(|s| s.span_id);
        assert_eq!(got, expect, "round trip must be exact");
        // The extent counts flushed and unflushed rows once each, with their time range.
        let spans_extent = store
            .extent(&t)
            .into_iter()
            .find(|e| e.signal == Signal::Spans)
            .expect("a spans extent");
        assert_eq!(
            (
                spans_extent.rows,
                spans_extent.unflushed_rows,
                spans_extent.segments
            ),
            (400, 200, 1)
        );
        assert_eq!(spans_extent.min_time, Some(UnixNanos(T0)));
        assert_eq!(
            spans_extent.max_time,
            Some(UnixNanos(T0 + 399 * 1_000_000_000))
        );
        let logs_extent = store
            .extent(&t)
            .into_iter()
            .find(|e| e.signal == Signal::Logs)
            .expect("a logs extent");
        assert_eq!((logs_extent.rows, logs_extent.min_time), (0, None));
        assert!(store.extent(&tenant("other")).iter().all(|e| e.rows == 0));
    }
    // Unflushed rows come back from the WAL; flushed ones from segments; none twice.
    let store = Store::open(dir.path(), config()).expect("reopen");
    assert_eq!(store.open_report().wal.records_replayed, 1);
    assert_eq!(spans_matching(&store, &t, vec![]), 400);
    assert_eq!(store.extent(&t)[0].rows, 400, "replayed rows counted once");
    store.flush().expect("flush");
    let after = &store.extent(&t)[0];
    assert_eq!((after.rows, after.unflushed_rows), (400, 0));
    let res = store
        .scan(&ScanRequest::new(t.clone(), Signal::Spans, TimeRange::ALL))
        .expect("scan");
    let mut all: Vec<SpanRecord> = res
        .batches
        .iter()
        .flat_map(|b| spans_from_batch(b).expect("decode"))
        .collect();
    all.sort_by_key(|s| s.span_id);
    let mut expect = spans.clone();
    expect.sort_by_key(|s| s.span_id);
    assert_eq!(all, expect);
    // Another tenant sees nothing.
    assert_eq!(spans_matching(&store, &tenant("other"), vec![]), 0);
}

#[test]
fn predicates_prune_and_agree_with_brute_force() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("acme");
    let store = Store::open(dir.path(), config()).expect("open");
    let spans: Vec<SpanRecord> = (0..3000)
        .map(|n| span(n, T0 + n as i64 * 100_000_000))
        .collect();
    for chunk in spans.chunks(500) {
        store.append_spans(&t, chunk).expect("append");
        store.flush().expect("flush");
    }
    // Half of the last chunk stays unflushed.
    let extra: Vec<SpanRecord> = (3000..3200)
        .map(|n| span(n, T0 + n as i64 * 100_000_000))
        .collect();
    store.append_spans(&t, &extra).expect("append");
    let all: Vec<SpanRecord> = spans.iter().chain(extra.iter()).cloned().collect();

    type Oracle = Box<dyn Fn(&SpanRecord) -> bool>;
    let cases: Vec<(Vec<Predicate>, Oracle)> = vec![
        (
            vec![Predicate::Attr(Matcher::eq(
                "gen_ai.request.model",
                "gpt-4o",
            ))],
            Box::new(|s: &SpanRecord| s.gen_ai.request_model.as_deref() == Some("gpt-4o")),
        ),
        (
            vec![
                Predicate::Attr(Matcher::eq("user.id", "u3")),
                Predicate::Attr(Matcher::eq("status", "error")),
            ],
            Box::new(|s: &SpanRecord| {
                s.status_code == StatusCode::Error
                    && s.attributes
                        .iter()
                        .any(|(k, v)| k == "user.id" && *v == AttrValue::Str("u3".into()))
            }),
        ),
        (
            vec![Predicate::Attr(
                Matcher::new("name", MatchOp::Regex, "op-[12]").expect("re"),
            )],
            Box::new(|s: &SpanRecord| s.name == "op-1" || s.name == "op-2"),
        ),
        (
            vec![Predicate::Attr(
                Matcher::new("service.name", MatchOp::NotEq, "gateway").expect("ne"),
            )],
            Box::new(|s: &SpanRecord| s.service_name != "gateway"),
        ),
        (
            vec![Predicate::Attr(Matcher::eq(
                "deployment.environment",
                "staging",
            ))],
            Box::new(|_: &SpanRecord| false),
        ),
        (
            vec![Predicate::Attr(Matcher::eq("retry", "1"))],
            Box::new(|s: &SpanRecord| {
                s.attributes
                    .iter()
                    .any(|(k, v)| k == "retry" && *v == AttrValue::Int(1))
            }),
        ),
    ];
    for (preds, oracle) in cases {
        let expect = all.iter().filter(|s| oracle(s)).count();
        assert_eq!(
            spans_matching(&store, &t, preds.clone()),
            expect,
            "{preds:?}"
        );
    }

    // A value no segment has prunes every segment through postings, touching no row group.
    let req = ScanRequest::new(t.clone(), Signal::Spans, TimeRange::ALL)
        .with(Predicate::Attr(Matcher::eq("user.id", "nobody")));
    let res = store.scan(&req).expect("scan");
    assert_eq!(res.stats.segments_total, 6);
    assert_eq!(res.stats.segments_pruned_by_index, 6);
    assert_eq!(res.stats.row_groups_read, 0);

    // A time range covering one flushed chunk reads one segment.
    let range = TimeRange::new(
        UnixNanos(T0 + 600 * 100_000_000),
        UnixNanos(T0 + 700 * 100_000_000),
    )
    .expect("range");
    let res = store
        .scan(&ScanRequest::new(t.clone(), Signal::Spans, range))
        .expect("scan");
    assert_eq!(res.num_rows(), 100);
    assert_eq!(res.stats.segments_read, 1);
    assert_eq!(res.stats.segments_pruned_by_time, 5);

    // Trace lookup through bloom filters reads only the segment holding the trace.
    let req = ScanRequest::new(t.clone(), Signal::Spans, TimeRange::ALL)
        .with(Predicate::TraceId(trace_id(300)));
    let res = store.scan(&req).expect("scan");
    assert_eq!(res.num_rows(), 4);
    assert!(res.stats.segments_read <= 2, "{:?}", res.stats);

    // Projection returns exactly the requested columns, in order.
    let req = ScanRequest::new(t.clone(), Signal::Spans, TimeRange::ALL)
        .with(Predicate::Attr(Matcher::eq("user.id", "u1")))
        .project(&[col::DURATION, col::SPAN_NAME]);
    let res = store.scan(&req).expect("scan");
    for b in &res.batches {
        let schema = b.schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, vec![col::DURATION, col::SPAN_NAME]);
    }
}

#[test]
fn logs_full_text_in_memory_and_on_disk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("acme");
    let store = Store::open(dir.path(), config()).expect("open");
    let logs: Vec<LogRecord> = (0..1000)
        .map(|n| log(n, T0 + n as i64 * 1_000_000))
        .collect();
    store.append_logs(&t, &logs[..600]).expect("append");
    store.flush().expect("flush");
    store.append_logs(&t, &logs[600..]).expect("append");
    let search = |q: &str, extra: Vec<Predicate>| {
        let mut req = ScanRequest::new(t.clone(), Signal::Logs, TimeRange::ALL)
            .with(Predicate::FullText(q.into()));
        req.predicates.extend(extra);
        let res = store.scan(&req).expect("scan");
        res.batches
            .iter()
            .flat_map(|b| logs_from_batch(b).expect("decode"))
            .collect::<Vec<_>>()
    };
    let hits = search("timeout", vec![]);
    assert_eq!(hits.len(), 200);
    assert!(hits.iter().all(|l| l.severity_text == "ERROR"));
    let hits = search(
        "\"tool call failed\"",
        vec![Predicate::Attr(Matcher::eq("user.id", "u2"))],
    );
    let expect = logs
        .iter()
        .filter(|l| l.severity_number == 17 && l.attributes[0].1 == AttrValue::Str("u2".into()))
        .count();
    assert_eq!(hits.len(), expect);
    let hits = search(
        "retrieved AND documents AND -timeout",
        vec![Predicate::TraceId(trace_id(7))],
    );
    assert_eq!(
        hits.len(),
        4 - usize::from(28 % 5 == 0) - usize::from(30 % 5 == 0)
    );
    // Bad query syntax is a typed client error.
    let err = store
        .scan(
            &ScanRequest::new(t.clone(), Signal::Logs, TimeRange::ALL)
                .with(Predicate::FullText("body:(".into())),
        )
        .expect_err("bad query");
    assert!(err.is_client_error(), "{err}");
}

/// A range that cuts a log segment's row group reads only the pages whose times it overlaps:
/// the newest lines of a search decode the last pages, not every matching line of the group.
#[test]
fn log_scans_read_only_the_pages_of_their_time_range() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("acme");
    let store = Store::open(dir.path(), config()).expect("open");
    let logs: Vec<LogRecord> = (0..5000)
        .map(|n| log(n, T0 + n as i64 * 1_000_000))
        .collect();
    store.append_logs(&t, &logs).expect("append");
    store.flush().expect("flush");
    let range = TimeRange::new(
        UnixNanos(T0 + 4_700 * 1_000_000),
        UnixNanos(T0 + 5_000 * 1_000_000),
    )
    .expect("range");
    let req = ScanRequest::new(t.clone(), Signal::Logs, range)
        .with(Predicate::FullText("timeout".into()));
    let res = store.scan(&req).expect("scan");
    let hits: Vec<LogRecord> = res
        .batches
        .iter()
        .flat_map(|b| logs_from_batch(b).expect("decode"))
        .collect();
    let want: Vec<&LogRecord> = logs
        .iter()
        .filter(|l| range.contains(l.time) && l.severity_number == 17)
        .collect();
    assert_eq!(hits.len(), want.len());
    assert!(hits.iter().zip(&want).all(|(a, b)| a == *b));
    // One row group of 5,000 lines in 1,024-line pages: the range lies in the last page
    // (lines 4,096-4,999), whose 181 matching lines are decoded, not the 1,000 of the group.
    assert_eq!(res.stats.row_groups_read, 1);
    assert!(
        res.stats.rows_decoded <= 181,
        "{} rows decoded",
        res.stats.rows_decoded
    );
}

fn metric_batch(series: &[SeriesDef], from_ms: i64, points: i64) -> MetricBatch {
    let mut samples = Vec::new();
    for (i, s) in series.iter().enumerate() {
        for p in 0..points {
            samples.push(Sample {
                series: s.id,
                timestamp_ms: from_ms + p * 10_000,
                value: (i as f64) * 1000.0 + p as f64,
            });
        }
    }
    MetricBatch {
        series: series.to_vec(),
        samples,
    }
}

/// A memtable of samples is flushed once it passes its own threshold, long before all
/// memtables together reach the general one, and not before.
#[test]
fn a_sample_memtable_past_its_threshold_is_flushed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = StoreConfig {
        background: true,
        sample_flush_threshold_bytes: 256 << 10,
        flush_interval: Duration::from_secs(3600),
        ..config()
    };
    let store = Store::open(dir.path(), cfg).expect("open");
    let t = tenant("acme");
    let series: Vec<SeriesDef> = (0..50)
        .map(|i| SeriesDef::new("up", MetricKind::Gauge, vec![("i".into(), i.to_string())]))
        .collect();
    // 50 series x 100 points, 24 bytes a sample: about 120 KiB, under the threshold.
    store
        .append_metrics(&t, &metric_batch(&series, T0 / 1_000_000, 100))
        .expect("append");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(store.stats().flushes, 0, "flushed under the threshold");
    // Past it: the store thread flushes without being asked.
    store
        .append_metrics(&t, &metric_batch(&series, T0 / 1_000_000 + 1_000_000, 200))
        .expect("append");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while store.stats().flushes == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let stats = store.stats();
    assert!(stats.flushes >= 1, "{stats:?}");
    assert_eq!(stats.memtable_bytes, 0, "{stats:?}");
    assert!(stats.segments >= 1, "{stats:?}");
}

#[test]
fn metrics_by_label_matchers_and_catalog_survives_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("acme");
    let series: Vec<SeriesDef> = ["gpt-4o", "claude-3", "llama"]
        .iter()
        .flat_map(|m| {
            ["tokens_total", "latency_seconds"].iter().map(move |n| {
                SeriesDef::new(*n, MetricKind::Counter, vec![("model".into(), (*m).into())])
            })
        })
        .collect();
    let t0_ms = T0 / 1_000_000;
    {
        let store = Store::open(dir.path(), config()).expect("open");
        store
            .append_metrics(&t, &metric_batch(&series, t0_ms, 100))
            .expect("append");
        store.flush().expect("flush");
        store
            .append_metrics(&t, &metric_batch(&series, t0_ms + 1_000_000, 50))
            .expect("append");
        // Re-sending the same samples (a client retry) does not duplicate them after flush.
        store
            .append_metrics(&t, &metric_batch(&series[..1], t0_ms, 100))
            .expect("append");
        store.flush().expect("flush");
    }
    let store = Store::open(dir.path(), config()).expect("reopen");
    let m = [
        Matcher::eq("__name__", "tokens_total"),
        Matcher::new("model", MatchOp::Regex, "gpt.*|claude.*").expect("re"),
    ];
    assert_eq!(store.series(&t, &m).len(), 2);
    let mut req = ScanRequest::new(t.clone(), Signal::Samples, TimeRange::ALL);
    req.predicates = m.iter().cloned().map(Predicate::Attr).collect();
    let res = store.scan(&req).expect("scan");
    assert_eq!(res.num_rows(), 2 * 150);
    assert_eq!(
        store.label_values(&t, "model"),
        vec!["claude-3", "gpt-4o", "llama"]
    );
    // Unknown series are refused and change nothing.
    let bad = MetricBatch {
        series: vec![],
        samples: vec![Sample {
            series: sightline_storage::SeriesId(42),
            timestamp_ms: t0_ms,
            value: 1.0,
        }],
    };
    assert!(store.append_metrics(&t, &bad).is_err());
    // A series whose id does not match its labels is refused.
    let mut forged = series[0].clone();
    forged.labels[0].1 = "other".into();
    assert!(
        store
            .append_metrics(&t, &metric_batch(&[forged], t0_ms, 1))
            .is_err()
    );
    let all = store
        .scan(&ScanRequest::new(
            t.clone(),
            Signal::Samples,
            TimeRange::ALL,
        ))
        .expect("scan");
    assert_eq!(all.num_rows(), 6 * 150);
}

#[test]
fn cardinality_limit_and_memory_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("acme");
    let store = Store::open(
        dir.path(),
        StoreConfig {
            max_series_per_tenant: 2,
            memory_budget_bytes: 200_000,
            ..config()
        },
    )
    .expect("open");
    let series: Vec<SeriesDef> = (0..3)
        .map(|i| SeriesDef::new("m", MetricKind::Gauge, vec![("i".into(), i.to_string())]))
        .collect();
    let err = store
        .append_metrics(&t, &metric_batch(&series, 0, 1))
        .expect_err("limit");
    assert!(
        matches!(
            err,
            sightline_storage::StorageError::CardinalityLimit { .. }
        ),
        "{err}"
    );
    assert!(
        store.series(&t, &[]).is_empty(),
        "a refused batch defines nothing"
    );
    // Per-series admission: first come, first served, repeats and known series free.
    let ids: Vec<_> = series.iter().map(|d| d.id).collect();
    assert_eq!(
        store.series_over_limit(&t, &[ids[1], ids[1], ids[0], ids[2], ids[2]]),
        vec![ids[2]]
    );
    store
        .append_metrics(&t, &metric_batch(&series[..2], 0, 1))
        .expect("within limit");
    assert_eq!(store.series_over_limit(&t, &[ids[0], ids[1]]), vec![]);
    assert_eq!(store.series_over_limit(&t, &[ids[2], ids[0]]), vec![ids[2]]);
    let spans: Vec<SpanRecord> = (0..200).map(|n| span(n, T0)).collect();
    let mut refused = 0;
    for _ in 0..50 {
        match store.append_spans(&t, &spans) {
            Ok(()) => {}
            Err(sightline_storage::StorageError::OverBudget { retry_after, .. }) => {
                assert!(retry_after > Duration::ZERO);
                refused += 1;
            }
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert!(refused > 0, "budget never enforced");
    assert!(store.stats().memtable_bytes <= 200_000 + 400_000);
    store.flush().expect("flush");
    store
        .append_spans(&t, &spans)
        .expect("fits again after flush");
}

#[test]
fn compaction_merges_and_keeps_every_row() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("acme");
    let store = Store::open(dir.path(), config()).expect("open");
    for c in 0..5u64 {
        let spans: Vec<SpanRecord> = (c * 100..c * 100 + 100)
            .map(|n| span(n, T0 + n as i64 * 1_000_000))
            .collect();
        store.append_spans(&t, &spans).expect("append");
        store.flush().expect("flush");
    }
    assert_eq!(store.segments().len(), 5);
    assert_eq!(store.compact().expect("compact"), 1);
    let segs = store.segments();
    assert_eq!(segs.len(), 1);
    assert_eq!(segs[0].rows, 500);
    assert_eq!(segs[0].level, 1);
    assert_eq!(spans_matching(&store, &t, vec![]), 500);
    assert_eq!(
        spans_matching(
            &store,
            &t,
            vec![Predicate::Attr(Matcher::eq("user.id", "u0"))]
        ),
        500 / 7 + 1
    );
    drop(store);
    // Old segment directories are gone; reopen finds exactly the merged one.
    let store = Store::open(dir.path(), config()).expect("reopen");
    assert!(store.open_report().removed_leftovers.is_empty());
    assert_eq!(spans_matching(&store, &t, vec![]), 500);
    let seg_dirs = walk_segment_dirs(dir.path());
    assert_eq!(seg_dirs.len(), 1, "{seg_dirs:?}");
}

fn walk_segment_dirs(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let data = root.join("data");
    for t in std::fs::read_dir(&data).into_iter().flatten().flatten() {
        for s in std::fs::read_dir(t.path()).into_iter().flatten().flatten() {
            for p in std::fs::read_dir(s.path()).into_iter().flatten().flatten() {
                for seg in std::fs::read_dir(p.path()).into_iter().flatten().flatten() {
                    out.push(seg.path());
                }
            }
        }
    }
    out
}

#[test]
fn retention_drops_whole_expired_partitions_per_tenant() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new(UnixNanos(T0 + 3 * HOUR)));
    let mut cfg = config();
    cfg.clock = clock.clone();
    cfg.retention.default_ttl = Some(Duration::from_secs(3600));
    cfg.retention
        .per_tenant
        .insert(tenant("keep"), Duration::from_secs(100 * 3600));
    let store = Store::open(dir.path(), cfg).expect("open");
    for t in [tenant("acme"), tenant("keep")] {
        for h in 0..3 {
            let spans: Vec<SpanRecord> =
                (0..10).map(|n| span(n, T0 + h * HOUR + n as i64)).collect();
            store.append_spans(&t, &spans).expect("append");
        }
    }
    store.flush().expect("flush");
    assert_eq!(store.segments().len(), 6);
    // Now = T0+3h, TTL 1h: partitions ending at or before T0+2h go (hours 0 and 1).
    assert_eq!(store.apply_retention().expect("retention"), 2);
    assert_eq!(spans_matching(&store, &tenant("acme"), vec![]), 10);
    assert_eq!(spans_matching(&store, &tenant("keep"), vec![]), 30);
    clock.advance(HOUR);
    assert_eq!(store.apply_retention().expect("retention"), 1);
    assert_eq!(spans_matching(&store, &tenant("acme"), vec![]), 0);
    assert_eq!(walk_segment_dirs(dir.path()).len(), 3);
}

#[test]
fn corrupt_segment_is_quarantined_and_the_rest_served() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("acme");
    {
        let store = Store::open(dir.path(), config()).expect("open");
        for c in 0..3u64 {
            let spans: Vec<SpanRecord> = (c * 100..c * 100 + 100)
                .map(|n| span(n, T0 + c as i64 * HOUR + n as i64))
                .collect();
            store.append_spans(&t, &spans).expect("append");
            store.flush().expect("flush");
        }
    }
    let victim = walk_segment_dirs(dir.path())
        .into_iter()
        .min()
        .expect("a segment")
        .join("data.parquet");
    let mut bytes = std::fs::read(&victim).expect("read");
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    std::fs::write(&victim, bytes).expect("write");
    let store = Store::open(dir.path(), config()).expect("opens despite damage");
    let report = store.open_report();
    assert_eq!(report.quarantined.len(), 1);
    assert!(
        report.quarantined[0]
            .moved_to
            .as_ref()
            .is_some_and(|p| p.exists())
    );
    assert_eq!(spans_matching(&store, &t, vec![]), 200);
    assert_eq!(store.stats().quarantined_segments, 1);
    drop(store);
    let store = Store::open(dir.path(), config()).expect("reopen");
    assert!(!store.open_report().found_damage());
    assert_eq!(spans_matching(&store, &t, vec![]), 200);
}

#[test]
fn corrupt_wal_tail_is_truncated_and_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("acme");
    {
        let store = Store::open(dir.path(), config()).expect("open");
        for c in 0..4u64 {
            let spans: Vec<SpanRecord> = (c * 10..c * 10 + 10)
                .map(|n| span(n, T0 + n as i64))
                .collect();
            store.append_spans(&t, &spans).expect("append");
        }
    }
    let wal = std::fs::read_dir(dir.path().join("wal"))
        .expect("wal dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| std::fs::metadata(p).map(|m| m.len() > 8).unwrap_or(false))
        .max()
        .expect("wal file");
    let mut bytes = std::fs::read(&wal).expect("read");
    let n = bytes.len();
    bytes[n - 20] ^= 0xff; // inside the last record
    std::fs::write(&wal, bytes).expect("write");
    let store = Store::open(dir.path(), config()).expect("open");
    let report = store.open_report();
    assert_eq!(report.wal.records_replayed, 3);
    assert_eq!(report.wal.problems.len(), 1);
    assert!(report.wal.truncated_bytes > 0);
    assert_eq!(spans_matching(&store, &t, vec![]), 30);
    store
        .append_spans(&t, &[span(99, T0)])
        .expect("append after repair");
    drop(store);
    let store = Store::open(dir.path(), config()).expect("reopen");
    assert!(!store.open_report().found_damage());
    assert_eq!(spans_matching(&store, &t, vec![]), 31);
}

#[test]
fn second_process_is_locked_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let _store = Store::open(dir.path(), config()).expect("open");
    let err = Store::open(dir.path(), config()).expect_err("locked");
    assert!(
        matches!(err, sightline_storage::StorageError::Locked(_)),
        "{err}"
    );
}

/// One large segment is read in parts by several threads; the rows, their order and the
/// pruning counts are those of a one-thread read.
#[test]
fn one_segment_is_read_in_parts_on_several_threads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = tenant("t");
    let n = 140_000u64;
    let mut cfg = config();
    cfg.segment.row_group_rows = 4096;
    let store = Store::open(dir.path(), cfg).expect("open");
    let spans: Vec<SpanRecord> = (0..n).map(|i| span(i, T0 + i as i64 * 1000)).collect();
    store.append_spans(&t, &spans).expect("append");
    store.flush().expect("flush");
    drop(store);
    let read = |threads: usize, preds: Vec<Predicate>| {
        let mut cfg = config();
        cfg.scan_threads = threads;
        let store = Store::open(dir.path(), cfg).expect("reopen");
        let mut req = ScanRequest::new(t.clone(), Signal::Spans, TimeRange::ALL)
            .project(&[col::SPAN_ID, col::DURATION]);
        req.predicates = preds;
        let res = store.scan(&req).expect("scan");
        let ids: Vec<Vec<u8>> = res
            .batches
            .iter()
            .flat_map(|b| {
                let a = b
                    .column(0)
                    .as_any()
                    .downcast_ref::<arrow_array::FixedSizeBinaryArray>()
                    .expect("span ids")
                    .clone();
                (0..arrow_array::Array::len(&a)).map(move |i| a.value(i).to_vec())
            })
            .collect();
        (ids, res.stats)
    };
    for preds in [
        vec![],
        vec![Predicate::Attr(Matcher::eq("service.name", "gateway"))],
    ] {
        let (one, s1) = read(1, preds.clone());
        let (four, s4) = read(4, preds.clone());
        let want = if preds.is_empty() { n } else { n.div_ceil(3) };
        assert_eq!(one.len() as u64, want);
        assert_eq!(one, four, "same rows in the same order");
        assert_eq!(s1.segments_read, 1);
        assert_eq!(s4.segments_read, 1);
        assert_eq!(s1.row_groups_read, s4.row_groups_read);
        assert_eq!(s1.rows_decoded, s4.rows_decoded);
        assert!(s4.row_groups_read > 30, "{s4:?}");
    }
}
