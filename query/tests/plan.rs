//! Aggregation plans against a brute-force computation over the same spans, with part of the
//! data flushed to Parquet segments and part still in memtables, so pruning and the vectorized
//! path can only make a plan faster, never different.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use proptest::prelude::*;
use sightline_query::plan::{
    AggFunc, Aggregate, Cell, CmpOp, FieldFilter, GroupBy, OrderBy, OrderKey, Plan, execute,
};
use sightline_storage::model::AttrValue;
use sightline_storage::{
    Matcher, Predicate, Signal, SpanId, SpanRecord, StatusCode, Store, StoreConfig, TenantId,
    TimeRange, TraceId, UnixNanos,
};

const MODELS: &[&str] = &["gpt-4o", "claude", "llama"];
const SERVICES: &[&str] = &["gateway", "retriever", "llm"];
const MINUTE: i64 = 60_000_000_000;
const T0: i64 = 1_767_225_600_000_000_000; // 2026-01-01T00:00:00Z

fn spans(seed: u64, n: usize) -> Vec<SpanRecord> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..n)
        .map(|i| {
            let r = next();
            let start = T0 + (r % (180 * MINUTE as u64)) as i64;
            let dur = 1_000_000 + (next() % 3_000_000_000) as i64;
            let mut s = SpanRecord::new(
                TraceId([(i % 251) as u8 + 1; 16]),
                SpanId((i as u64 + 1).to_be_bytes()),
                SERVICES[(r >> 20) as usize % 3],
                "chat",
                UnixNanos(start),
                UnixNanos(start + dur),
            );
            if (r >> 24) % 4 != 0 {
                s.gen_ai.request_model = Some(MODELS[(r >> 26) as usize % 3].into());
                s.gen_ai.input_tokens = Some((r >> 30) as i64 % 5000);
            }
            if (r >> 34) % 10 == 0 {
                s.status_code = StatusCode::Error;
            }
            s.attributes = vec![(
                "user.id".into(),
                AttrValue::Str(format!("u{}", (r >> 36) % 7)),
            )];
            s
        })
        .collect()
}

fn store(all: &[SpanRecord], flushed: usize) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
    let t = TenantId::new("t").unwrap();
    store.append_spans(&t, &all[..flushed]).unwrap();
    store.flush().unwrap();
    store.append_spans(&t, &all[flushed..]).unwrap();
    (dir, store)
}

fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let rank = q * (v.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = (lo + 1).min(v.len() - 1);
    v[lo] + (v[hi] - v[lo]) * (rank - lo as f64)
}

fn range(a: i64, b: i64) -> TimeRange {
    TimeRange::new(UnixNanos(T0 + a * MINUTE), UnixNanos(T0 + b * MINUTE)).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Latency quantiles, token sums, counts and error ratios by model per time bucket, with
    /// a model filter, a user filter and a duration filter, equal the brute-force answer.
    #[test]
    fn aggregates_equal_brute_force(
        seed in 1u64..u64::MAX,
        n in 200usize..1500,
        flushed_pct in 0usize..=100,
        from in 0i64..90,
        len in 1i64..120,
        bucket_min in prop::sample::select(vec![1i64, 5, 60]),
        model_filter in prop::option::of(0usize..3),
        user_filter in prop::option::of(0u64..7),
        min_dur in prop::option::of(0i64..2_000_000_000),
    ) {
        let all = spans(seed, n);
        let (_d, store) = store(&all, n * flushed_pct / 100);
        let time = range(from, from + len);
        let mut plan = Plan::new(TenantId::new("t").unwrap(), Signal::Spans, time);
        if let Some(m) = model_filter {
            plan.predicates.push(Predicate::Attr(Matcher::eq("gen_ai.request.model", MODELS[m])));
        }
        if let Some(u) = user_filter {
            plan.predicates.push(Predicate::Attr(Matcher::eq("user.id", format!("u{u}"))));
        }
        if let Some(d) = min_dur {
            plan.filters.push(FieldFilter { field: "duration".into(), op: CmpOp::Ge, value: d as f64 });
        }
        let step = bucket_min * MINUTE;
        plan.group_by = vec![GroupBy::Key("gen_ai.request.model".into()), GroupBy::Time(step)];
        plan.aggregates = vec![
            Aggregate { func: AggFunc::Count, field: None },
            Aggregate { func: AggFunc::Quantile(0.99), field: Some("duration".into()) },
            Aggregate { func: AggFunc::Sum, field: Some("gen_ai.usage.input_tokens".into()) },
            Aggregate { func: AggFunc::ErrorRatio, field: None },
            Aggregate { func: AggFunc::Max, field: Some("duration".into()) },
        ];
        let got = execute(&store, &plan).unwrap();

        // Brute force.
        let mut want: BTreeMap<(String, i64), Vec<&SpanRecord>> = BTreeMap::new();
        for s in &all {
            if s.start.0 < time.start.0 || s.start.0 >= time.end.0 { continue; }
            let model = s.gen_ai.request_model.clone().unwrap_or_default();
            if model_filter.is_some_and(|m| model != MODELS[m]) { continue; }
            if let Some(u) = user_filter {
                let AttrValue::Str(v) = &s.attributes[0].1 else { unreachable!() };
                if *v != format!("u{u}") { continue; }
            }
            let dur = s.end.0 - s.start.0;
            if min_dur.is_some_and(|d| dur < d) { continue; }
            want.entry((model, s.start.0.div_euclid(step) * step)).or_default().push(s);
        }
        prop_assert_eq!(got.rows.len(), want.len());
        prop_assert_eq!(got.explain.groups, want.len());
        for (row, ((model, bucket), ss)) in got.rows.iter().zip(&want) {
            prop_assert_eq!(&row[0], &Cell::Str(model.clone()));
            prop_assert_eq!(&row[1], &Cell::Int(*bucket));
            prop_assert_eq!(&row[2], &Cell::Int(ss.len() as i64));
            let durs: Vec<f64> = ss.iter().map(|s| (s.end.0 - s.start.0) as f64).collect();
            let q = quantile(durs.clone(), 0.99);
            prop_assert!((row[3].as_f64().unwrap() - q).abs() <= 1e-6 * q.abs());
            let toks: Vec<i64> = ss.iter().filter_map(|s| s.gen_ai.input_tokens).collect();
            if toks.is_empty() {
                prop_assert_eq!(&row[4], &Cell::Null);
            } else {
                prop_assert_eq!(row[4].as_f64().unwrap(), toks.iter().sum::<i64>() as f64);
            }
            let errs = ss.iter().filter(|s| s.status_code == StatusCode::Error).count();
            prop_assert!((row[5].as_f64().unwrap() - errs as f64 / ss.len() as f64).abs() < 1e-12);
            prop_assert_eq!(row[6].as_f64().unwrap(), durs.iter().copied().fold(f64::MIN, f64::max));
        }
    }

    /// The slowest spans of one user equal the brute-force top-k.
    #[test]
    fn top_rows_equal_brute_force(
        seed in 1u64..u64::MAX,
        n in 100usize..1000,
        flushed_pct in 0usize..=100,
        user in 0u64..7,
        limit in 1usize..20,
    ) {
        let all = spans(seed, n);
        let (_d, store) = store(&all, n * flushed_pct / 100);
        let mut plan = Plan::new(TenantId::new("t").unwrap(), Signal::Spans, TimeRange::ALL);
        plan.predicates.push(Predicate::Attr(Matcher::eq("user.id", format!("u{user}"))));
        plan.columns = vec!["duration".into(), "service.name".into(), "user.id".into()];
        plan.order_by = Some(OrderBy { by: OrderKey::Field("duration".into()), descending: true });
        plan.limit = Some(limit);
        let got = execute(&store, &plan).unwrap();
        let mut want: Vec<&SpanRecord> = all
            .iter()
            .filter(|s| matches!(&s.attributes[0].1, AttrValue::Str(v) if *v == format!("u{user}")))
            .collect();
        want.sort_by_key(|s| std::cmp::Reverse(s.end.0 - s.start.0));
        want.truncate(limit);
        prop_assert_eq!(got.rows.len(), want.len());
        for (row, s) in got.rows.iter().zip(&want) {
            prop_assert_eq!(row[1].as_f64().unwrap(), (s.end.0 - s.start.0) as f64);
            prop_assert_eq!(&row[3], &Cell::Str(format!("u{user}")));
        }
    }
}

/// Postings prune: a filter on one user reads fewer rows than the whole segment holds, and the
/// explain says so.
#[test]
fn explain_shows_index_pruning() {
    let all = spans(7, 20_000);
    let (_d, store) = store(&all, all.len());
    let t = TenantId::new("t").unwrap();
    let mut plan = Plan::new(t, Signal::Spans, TimeRange::ALL);
    plan.predicates
        .push(Predicate::Attr(Matcher::eq("user.id", "u3")));
    plan.aggregates = vec![Aggregate {
        func: AggFunc::Count,
        field: None,
    }];
    let got = execute(&store, &plan).unwrap();
    let want = all
        .iter()
        .filter(|s| matches!(&s.attributes[0].1, AttrValue::Str(v) if v == "u3"))
        .count();
    assert_eq!(got.rows, vec![vec![Cell::Int(want as i64)]]);
    assert_eq!(got.explain.rows_scanned, want as u64);
    assert!(got.explain.scan.rows_decoded < all.len() as u64);
    assert!(
        got.explain.columns_read.len() <= 4,
        "{:?}",
        got.explain.columns_read
    );
}

/// Bad plans get clear errors.
#[test]
fn bad_plans_are_refused() {
    let (_d, store) = store(&spans(1, 10), 0);
    let t = TenantId::new("t").unwrap();
    let mut plan = Plan::new(t.clone(), Signal::Spans, TimeRange::ALL);
    plan.aggregates = vec![Aggregate {
        func: AggFunc::Sum,
        field: Some("nope".into()),
    }];
    let e = execute(&store, &plan).unwrap_err().to_string();
    assert!(e.contains("unknown numeric field \"nope\""), "{e}");
    plan.aggregates = vec![Aggregate {
        func: AggFunc::Quantile(1.5),
        field: Some("duration".into()),
    }];
    assert!(execute(&store, &plan).is_err());
    let mut rows = Plan::new(t.clone(), Signal::Spans, TimeRange::ALL);
    rows.columns = vec!["duration".into()];
    assert!(
        execute(&store, &rows)
            .unwrap_err()
            .to_string()
            .contains("limit")
    );
    let samples = Plan::new(t, Signal::Samples, TimeRange::ALL);
    assert!(execute(&store, &samples).is_err());
}
