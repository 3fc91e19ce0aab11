//! `Predicate::AnyOf`: rows any of its matchers accepts, from segments and memtables alike;
//! segments where no alternative's value occurs are pruned by postings; the answer equals the
//! union of single-matcher scans; bad alternatives are refused.

use std::collections::BTreeSet;

use arrow_array::{Array, FixedSizeBinaryArray};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use sightline_storage::schema::col;
use sightline_storage::{
    MAX_ANY_OF, MatchOp, Matcher, Predicate, ScanRequest, ScanResult, Signal, SpanId, SpanRecord,
    StorageError, Store, TimeRange, UnixNanos,
};

use super::{HOUR, T0, config, log, tenant, trace_id};

const REQUEST: &str = "gen_ai.request.model";
const RESPONSE: &str = "gen_ai.response.model";

/// (request model, response model) of the spans numbered `n % 5`.
const MODELS: [(Option<&str>, Option<&str>); 5] = [
    (Some("gpt-4o"), Some("gpt-4o-2024-08-06")),
    (Some("gpt-4o-mini"), Some("gpt-4o-mini-2024-07-18")),
    (Some("claude-3"), None),
    (None, Some("gpt-4o")),
    (Some("alias"), Some("gpt-4o-2024-08-06")),
];

fn llm_span(n: u64, t: i64, (request, response): (Option<&str>, Option<&str>)) -> SpanRecord {
    let mut s = SpanRecord::new(
        trace_id(n),
        SpanId((n + 1).to_be_bytes()),
        "llm",
        "chat",
        UnixNanos(t),
        UnixNanos(t + 1_000_000),
    );
    s.gen_ai.request_model = request.map(str::to_owned);
    s.gen_ai.response_model = response.map(str::to_owned);
    s.attributes = vec![(
        "user.id".into(),
        sightline_storage::AttrValue::Str(format!("u{}", n % 3)),
    )];
    s
}

/// Segment 1 (ids 0..50) holds every model; segment 2 (ids 1000..1020, an hour later) only
/// llama; the memtable (ids 2000..2025) every model again.
fn store(dir: &std::path::Path) -> (Store, Vec<SpanRecord>) {
    let store = Store::open(dir, config()).expect("open");
    let t = tenant("acme");
    let seg1: Vec<SpanRecord> = (0..50)
        .map(|n| llm_span(n, T0 + n as i64, MODELS[(n % 5) as usize]))
        .collect();
    let seg2: Vec<SpanRecord> = (1000..1020)
        .map(|n| {
            llm_span(
                n,
                T0 + HOUR + n as i64,
                (Some("llama-3"), Some("llama-3-70b")),
            )
        })
        .collect();
    let mem: Vec<SpanRecord> = (2000..2025)
        .map(|n| llm_span(n, T0 + 2 * HOUR + n as i64, MODELS[(n % 5) as usize]))
        .collect();
    for part in [&seg1, &seg2] {
        store.append_spans(&t, part).expect("append");
        store.flush().expect("flush");
    }
    store.append_spans(&t, &mem).expect("append");
    let all = seg1.into_iter().chain(seg2).chain(mem).collect();
    (store, all)
}

fn value_of(s: &SpanRecord, key: &str) -> String {
    match key {
        REQUEST => s.gen_ai.request_model.clone().unwrap_or_default(),
        RESPONSE => s.gen_ai.response_model.clone().unwrap_or_default(),
        _ => s
            .attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.render())
            .unwrap_or_default(),
    }
}

fn ids(res: &ScanResult) -> BTreeSet<u64> {
    let mut out = BTreeSet::new();
    for b in &res.batches {
        let a = b
            .column_by_name(col::SPAN_ID)
            .and_then(|c| c.as_any().downcast_ref::<FixedSizeBinaryArray>())
            .expect("span ids");
        for i in 0..a.len() {
            let bytes: [u8; 8] = a.value(i).try_into().expect("8 bytes");
            out.insert(u64::from_be_bytes(bytes) - 1);
        }
    }
    out
}

fn scan(store: &Store, preds: Vec<Predicate>) -> ScanResult {
    let mut req = ScanRequest::new(tenant("acme"), Signal::Spans, TimeRange::ALL);
    req.predicates = preds;
    store.scan(&req.project(&[col::SPAN_ID])).expect("scan")
}

fn expected(all: &[SpanRecord], ms: &[Matcher]) -> BTreeSet<u64> {
    all.iter()
        .filter(|s| ms.iter().any(|m| m.matches(&value_of(s, &m.key))))
        .map(|s| u64::from_be_bytes(s.span_id.0) - 1)
        .collect()
}

fn model(v: &str) -> Vec<Matcher> {
    vec![Matcher::eq(REQUEST, v), Matcher::eq(RESPONSE, v)]
}

#[test]
fn any_of_finds_rows_in_segments_and_memtables_and_prunes_by_postings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, all) = store(dir.path());
    for ms in [
        model("gpt-4o"),
        model("gpt-4o-2024-08-06"),
        vec![
            Matcher::new(REQUEST, MatchOp::Regex, "gpt-4o-mi.*").expect("re"),
            Matcher::eq(RESPONSE, "gpt-4o"),
        ],
    ] {
        let res = scan(&store, vec![Predicate::AnyOf(ms.clone())]);
        let want = expected(&all, &ms);
        assert_eq!(ids(&res), want, "{ms:?}");
        assert!(want.iter().any(|&n| n < 1000), "{ms:?}: segment rows");
        assert!(want.iter().any(|&n| n >= 2000), "{ms:?}: memtable rows");
        // The llama segment has none of the values: its postings prune it.
        assert_eq!(res.stats.segments_total, 2, "{:?}", res.stats);
        assert_eq!(res.stats.segments_pruned_by_index, 1, "{:?}", res.stats);
        assert_eq!(res.stats.segments_read, 1, "{:?}", res.stats);
        assert_eq!(res.stats.memtable_rows, 25, "{:?}", res.stats);
        assert_eq!(res.stats.rows_returned, want.len() as u64);
    }
    // Only the first pattern has request model gpt-4o: request *or* response is what finds the
    // spans whose response model alone says gpt-4o.
    let both = ids(&scan(&store, vec![Predicate::AnyOf(model("gpt-4o"))]));
    let request_only = ids(&scan(
        &store,
        vec![Predicate::Attr(Matcher::eq(REQUEST, "gpt-4o"))],
    ));
    assert!(request_only.is_subset(&both) && request_only.len() < both.len());
    let dated = ids(&scan(
        &store,
        vec![Predicate::AnyOf(model("gpt-4o-2024-08-06"))],
    ));
    assert!(dated.iter().all(|n| n % 5 == 0 || n % 5 == 4), "{dated:?}");

    // A value no segment has prunes both segments.
    let res = scan(&store, vec![Predicate::AnyOf(model("nothing"))]);
    assert_eq!(res.num_rows(), 0);
    assert_eq!(res.stats.segments_pruned_by_index, 2, "{:?}", res.stats);
    assert_eq!(res.stats.row_groups_read, 0);

    // An alternative accepting rows without its key cannot prune; the answer stays exact.
    let ms = vec![
        Matcher::eq(REQUEST, "gpt-4o"),
        Matcher::new(RESPONSE, MatchOp::NotEq, "llama-3-70b").expect("ne"),
    ];
    let res = scan(&store, vec![Predicate::AnyOf(ms.clone())]);
    assert_eq!(ids(&res), expected(&all, &ms));
    assert_eq!(res.stats.segments_pruned_by_index, 0, "{:?}", res.stats);

    // ANDed with a plain matcher; and rollups are never used with alternatives.
    let mut req = ScanRequest::new(tenant("acme"), Signal::Spans, TimeRange::ALL)
        .with(Predicate::AnyOf(model("gpt-4o")))
        .with(Predicate::Attr(Matcher::eq("user.id", "u1")))
        .project(&[col::SPAN_ID]);
    req.rollups = true;
    let res = store.scan(&req).expect("scan");
    let want: BTreeSet<u64> = expected(&all, &model("gpt-4o"))
        .into_iter()
        .filter(|n| n % 3 == 1)
        .collect();
    assert_eq!(ids(&res), want);
    assert_eq!(res.stats.segments_from_rollup, 0, "{:?}", res.stats);
    assert!(res.rollups.is_empty());
}

#[test]
fn any_of_outside_its_bounds_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _) = store(dir.path());
    let t = tenant("acme");
    let many = |n: usize| {
        (0..n)
            .map(|i| Matcher::eq(REQUEST, i.to_string()))
            .collect()
    };
    for (signal, ms) in [
        (Signal::Spans, Vec::new()),
        (Signal::Spans, many(MAX_ANY_OF + 1)),
        (Signal::Logs, Vec::new()),
        (Signal::Samples, many(1)),
    ] {
        let req = ScanRequest::new(t.clone(), signal, TimeRange::ALL).with(Predicate::AnyOf(ms));
        let e = store.scan(&req).expect_err("refused");
        assert!(matches!(e, StorageError::InvalidQuery(_)), "{signal}: {e}");
    }
    let res = scan(&store, vec![Predicate::AnyOf(many(MAX_ANY_OF))]);
    assert_eq!(res.num_rows(), 0);
}

#[test]
fn any_of_applies_to_logs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), config()).expect("open");
    let t = tenant("acme");
    let logs: Vec<_> = (0..60).map(|n| log(n, T0 + n as i64)).collect();
    store.append_logs(&t, &logs[..40]).expect("append");
    store.flush().expect("flush");
    store.append_logs(&t, &logs[40..]).expect("append");
    let ms = vec![
        Matcher::eq("severity_text", "ERROR"),
        Matcher::eq("user.id", "u1"),
    ];
    let want = logs
        .iter()
        .filter(|l| {
            l.severity_text == "ERROR"
                || l.attributes
                    .iter()
                    .any(|(k, v)| k == "user.id" && v.render() == "u1")
        })
        .count();
    assert!(want > 0 && want < logs.len());
    let req = ScanRequest::new(t.clone(), Signal::Logs, TimeRange::ALL).with(Predicate::AnyOf(ms));
    let res = store.scan(&req).expect("scan");
    assert_eq!(res.num_rows(), want);
    assert_eq!(res.stats.segments_read, 1, "{:?}", res.stats);
}

fn matcher() -> impl Strategy<Value = Matcher> {
    let key = prop::sample::select(vec![REQUEST, RESPONSE, "user.id"]);
    let op = prop::sample::select(vec![
        MatchOp::Eq,
        MatchOp::NotEq,
        MatchOp::Regex,
        MatchOp::NotRegex,
    ]);
    let value = prop::sample::select(vec![
        "gpt-4o",
        "gpt-4o-2024-08-06",
        "gpt-4o.*",
        "claude-3|alias",
        "llama-3",
        "u1",
        "",
    ]);
    (key, op, value).prop_map(|(k, op, v)| Matcher::new(k, op, v).expect("matcher"))
}

#[test]
fn any_of_equals_the_union_of_single_matcher_scans() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, all) = store(dir.path());
    let mut runner = TestRunner::new(Config::with_cases(48));
    runner
        .run(&prop::collection::vec(matcher(), 1..=3), |ms| {
            let got = ids(&scan(&store, vec![Predicate::AnyOf(ms.clone())]));
            let mut union = BTreeSet::new();
            for m in &ms {
                union.extend(ids(&scan(&store, vec![Predicate::Attr(m.clone())])));
            }
            prop_assert_eq!(&got, &union, "{:?}", ms);
            prop_assert_eq!(&got, &expected(&all, &ms), "{:?}", ms);
            Ok(())
        })
        .expect("AnyOf = OR of its matchers");
}
