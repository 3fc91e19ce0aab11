//! A rollup leaves out a key whose values would make it large (here 2,000 span names in a
//! segment of 8,000 spans): scans that neither filter, group nor project on that key answer
//! from the rollup, the others read the rows, and both agree with the spans.

use arrow_array::{Array, UInt64Array};
use sightline_storage::rollup::ROWS;
use sightline_storage::schema::col;
use sightline_storage::{
    Matcher, Predicate, ScanRequest, Signal, SpanId, SpanRecord, Store, TimeRange, UnixNanos,
};

use super::{T0, config, tenant, trace_id};

fn span(n: u64) -> SpanRecord {
    SpanRecord::new(
        trace_id(n / 4),
        SpanId((n + 1).to_be_bytes()),
        ["api", "rag"][(n % 2) as usize],
        format!("GET /item/{}", n % 2_000),
        UnixNanos(T0 + n as i64 * 1_000_000),
        UnixNanos(T0 + n as i64 * 1_000_000 + 500),
    )
}

fn rollup_spans(res: &sightline_storage::ScanResult) -> u64 {
    res.rollups
        .iter()
        .map(|b| {
            let a = b.column_by_name(ROWS).expect("rows column");
            let a = a.as_any().downcast_ref::<UInt64Array>().expect("u64");
            a.values().iter().sum::<u64>()
        })
        .sum()
}

#[test]
fn scans_not_needing_a_left_out_key_answer_from_the_rollup() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), config()).expect("open");
    let t = tenant("acme");
    let spans: Vec<SpanRecord> = (0..8_000).map(span).collect();
    store.append_spans(&t, &spans).expect("append");
    store.flush().expect("flush");
    let scan = |projection: &[&str], predicates: Vec<Predicate>| {
        let mut req =
            ScanRequest::new(t.clone(), Signal::Spans, TimeRange::ALL).project(projection);
        req.predicates = predicates;
        req.rollups = true;
        store.scan(&req).expect("scan")
    };
    // By service: from the rollup, every span counted once.
    let res = scan(&[col::SERVICE_NAME, col::START_TIME], Vec::new());
    assert_eq!(res.stats.segments_from_rollup, 1, "{:?}", res.stats);
    assert_eq!(rollup_spans(&res), 8_000);
    let api = scan(
        &[col::SERVICE_NAME, col::START_TIME],
        vec![Predicate::Attr(Matcher::eq("service.name", "api"))],
    );
    assert_eq!(rollup_spans(&api), 4_000);
    // By span name, or filtered on it: the rows, which know the names.
    for res in [
        scan(&[col::SPAN_NAME, col::START_TIME], Vec::new()),
        scan(
            &[col::SERVICE_NAME],
            vec![Predicate::Attr(Matcher::eq("name", "GET /item/7"))],
        ),
    ] {
        assert_eq!(res.stats.segments_from_rollup, 0, "{:?}", res.stats);
        assert!(res.rollups.is_empty());
        let rows: usize = res.batches.iter().map(|b| b.num_rows()).sum();
        assert!(rows == 8_000 || rows == 4, "{rows} rows");
    }
}

/// Counts per span name from a scan's rows and rollup rows together.
fn counts_by_name(res: &sightline_storage::ScanResult) -> std::collections::BTreeMap<String, u64> {
    use arrow_array::StringArray;
    let mut out = std::collections::BTreeMap::new();
    for b in &res.batches {
        let names = b.column_by_name(col::SPAN_NAME).expect("name column");
        let names = names.as_any().downcast_ref::<StringArray>().expect("utf8");
        for i in 0..names.len() {
            *out.entry(names.value(i).to_owned()).or_insert(0) += 1;
        }
    }
    for b in &res.rollups {
        let names = b.column_by_name(col::SPAN_NAME).expect("name column");
        let names = names.as_any().downcast_ref::<StringArray>().expect("utf8");
        let rows = b.column_by_name(ROWS).expect("rows column");
        let rows = rows.as_any().downcast_ref::<UInt64Array>().expect("u64");
        for i in 0..names.len() {
            *out.entry(names.value(i).to_owned()).or_insert(0) += rows.value(i);
        }
    }
    out
}

/// 48,000 spans over four hours with 40 span names: too many names per minute for the minute
/// rollup (it leaves the name out), few enough per hour for the hourly rollup. A count by name
/// over a range that starts and ends inside hours answers the whole hours from hourly rollups
/// and reads only the spans of the partial hours, and agrees with the rows; callers whose time
/// buckets are not whole hours, or who need durations, read the rows.
#[test]
fn whole_hours_answer_from_the_hourly_rollup_with_every_key() {
    const MINUTE: i64 = 60_000_000_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), config()).expect("open");
    let t = tenant("acme");
    let start = |n: u64| T0 + n as i64 * 300_000_000;
    let spans: Vec<SpanRecord> = (0..48_000u64)
        .map(|n| {
            SpanRecord::new(
                trace_id(n / 4),
                SpanId((n + 1).to_be_bytes()),
                ["api", "rag"][(n % 2) as usize],
                format!("step {}", n % 40),
                UnixNanos(start(n)),
                UnixNanos(start(n) + 1_000 + n as i64 % 977),
            )
        })
        .collect();
    store.append_spans(&t, &spans).expect("append");
    store.flush().expect("flush");
    let (lo, hi) = (
        T0 + 17 * MINUTE + 30_000_000_000,
        T0 + 202 * MINUTE + 15_000_000_000,
    );
    let range = TimeRange::new(UnixNanos(lo), UnixNanos(hi)).expect("range");
    let scan = |rollups: bool, hours: bool, durations: bool| {
        let mut req = ScanRequest::new(t.clone(), Signal::Spans, range)
            .project(&[col::SPAN_NAME, col::START_TIME]);
        req.rollups = rollups;
        req.rollup_hours = hours;
        req.rollup_durations = durations;
        store.scan(&req).expect("scan")
    };
    let rows = scan(false, false, false);
    assert!(rows.rollups.is_empty());
    let expected = counts_by_name(&rows);
    assert_eq!(expected.len(), 40);
    let in_range = |a: i64, b: i64| (0..48_000).filter(|&n| (a..b).contains(&start(n))).count();
    assert_eq!(expected.values().sum::<u64>() as usize, in_range(lo, hi));

    let hourly = scan(true, true, false);
    assert_eq!(counts_by_name(&hourly), expected);
    let (h1, h2) = (T0 + 60 * MINUTE, T0 + 180 * MINUTE);
    assert_eq!(rollup_spans(&hourly) as usize, in_range(h1, h2));
    assert_eq!(
        hourly.num_rows(),
        in_range(lo, h1) + in_range(h2, hi),
        "only the partial hours are read as rows: {:?}",
        hourly.stats
    );
    assert!(hourly.stats.segments_from_rollup >= 1, "{:?}", hourly.stats);

    for res in [scan(true, false, false), scan(true, true, true)] {
        assert!(res.rollups.is_empty(), "{:?}", res.stats);
        assert_eq!(counts_by_name(&res), expected);
    }
}
