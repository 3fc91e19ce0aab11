//! `ScanRequest::dictionary`: segments return the named string columns dictionary-encoded with
//! the same values as a plain read; unflushed rows and predicate columns stay plain strings; a
//! segment wholly inside the time range is read without its time column and gives the same rows.

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use sightline_storage::schema::col;
use sightline_storage::{Matcher, Predicate, ScanRequest, Signal, Store, TimeRange, UnixNanos};

use super::{HOUR, T0, config, span, tenant};

/// Service name of every returned row, counted, whatever the column's encoding.
fn names(batches: &[RecordBatch]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for b in batches {
        let c = b.column_by_name(col::SERVICE_NAME).expect("service column");
        for i in 0..b.num_rows() {
            let v = match c.data_type() {
                DataType::Utf8 => c.as_string::<i32>().value(i).to_owned(),
                DataType::Dictionary(_, _) => {
                    let d = c.as_dictionary::<Int32Type>();
                    let k = d.keys().value(i) as usize;
                    d.values().as_string::<i32>().value(k).to_owned()
                }
                other => panic!("unexpected type {other}"),
            };
            *out.entry(v).or_default() += 1;
        }
    }
    out
}

#[test]
fn dictionary_columns_hold_the_plain_values() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), config()).expect("open");
    let t = tenant("t");
    let flushed: Vec<_> = (0..3_000)
        .map(|n| span(n, T0 + n as i64 * 1_000_000))
        .collect();
    store.append_spans(&t, &flushed).expect("append");
    store.flush().expect("flush");
    let live: Vec<_> = (3_000..3_500)
        .map(|n| span(n, T0 + n as i64 * 1_000_000))
        .collect();
    store.append_spans(&t, &live).expect("append");

    // Inside the range (the segment wholly) and cutting through it.
    for time in [
        TimeRange::new(UnixNanos(T0 - HOUR), UnixNanos(T0 + HOUR)).expect("range"),
        TimeRange::new(UnixNanos(T0 + 1_234_567_890), UnixNanos(T0 + HOUR)).expect("range"),
    ] {
        let plain = ScanRequest::new(t.clone(), Signal::Spans, time).project(&[col::SERVICE_NAME]);
        let mut dict = plain.clone();
        dict.dictionary = vec![col::SERVICE_NAME.to_owned()];
        let a = store.scan(&plain).expect("scan");
        let b = store.scan(&dict).expect("scan");
        assert_eq!(names(&a.batches), names(&b.batches));
        assert_eq!(a.num_rows(), b.num_rows());
        let types: Vec<bool> = b
            .batches
            .iter()
            .map(|x| matches!(x.column(0).data_type(), DataType::Dictionary(_, _)))
            .collect();
        assert!(types.contains(&true), "segment rows are dictionary-encoded");
        assert!(types.contains(&false), "unflushed rows stay plain");
        let want = flushed
            .iter()
            .chain(&live)
            .filter(|s| time.contains(s.start))
            .count();
        assert_eq!(b.num_rows(), want);
    }

    // A predicate on the column keeps it plain.
    let mut filtered = ScanRequest::new(t.clone(), Signal::Spans, TimeRange::ALL)
        .with(Predicate::Attr(Matcher::eq("service.name", "gateway")))
        .project(&[col::SERVICE_NAME]);
    filtered.dictionary = vec![col::SERVICE_NAME.to_owned()];
    let r = store.scan(&filtered).expect("scan");
    assert!(
        r.batches
            .iter()
            .all(|b| b.column(0).data_type() == &DataType::Utf8)
    );
    assert_eq!(names(&r.batches).keys().collect::<Vec<_>>(), ["gateway"]);
}
