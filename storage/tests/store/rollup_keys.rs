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
