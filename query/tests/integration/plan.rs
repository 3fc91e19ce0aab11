//! Aggregation plans against a brute-force computation over the same spans, with part of the
//! data flushed to Parquet segments and part still in memtables, so pruning and the vectorized
//! path can only make a plan faster, never different.

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

/// A store whose spans are flushed in `parts` segments (the last part left unflushed when
/// `keep_last` is set).
fn store_in_parts(all: &[SpanRecord], parts: usize, keep_last: bool) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
    let t = TenantId::new("t").unwrap();
    let chunk = all.len().div_ceil(parts.max(1));
    let chunks: Vec<&[SpanRecord]> = all.chunks(chunk.max(1)).collect();
    for (i, c) in chunks.iter().enumerate() {
        store.append_spans(&t, c).unwrap();
        if !(keep_last && i + 1 == chunks.len()) {
            store.flush().unwrap();
        }
    }
    (dir, store)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Plans that span rollups can answer (counts, sums, means, extremes, error ratios, rates
    /// and duration quantiles by rollup keys and whole-minute buckets) equal the brute-force
    /// answer over any
    /// time range, aligned to minutes or not, with part of the data unflushed.
    #[test]
    fn rollup_answers_equal_brute_force(
        seed in 1u64..u64::MAX,
        n in 200usize..1500,
        parts in 1usize..4,
        keep_last in any::<bool>(),
        from_s in prop::option::of(0i64..(90 * 60)),
        len_s in 1i64..(150 * 60),
        aligned in any::<bool>(),
        by_service in any::<bool>(),
        by_status in any::<bool>(),
        bucket_min in prop::option::of(prop::sample::select(vec![1i64, 5, 60])),
        model_pred in prop::option::of(0usize..4),
        error_only in any::<bool>(),
    ) {
        let all = spans(seed, n);
        let (_d, store) = store_in_parts(&all, parts, keep_last);
        let sec = 1_000_000_000i64;
        let (time, lo, hi) = match from_s {
            None => (TimeRange::ALL, i64::MIN, i64::MAX),
            Some(f) => {
                let (a, b) = if aligned {
                    (T0 + (f / 60) * MINUTE, T0 + ((f + len_s) / 60 + 1) * MINUTE)
                } else {
                    (T0 + f * sec + 17, T0 + (f + len_s) * sec + 3)
                };
                (TimeRange::new(UnixNanos(a), UnixNanos(b)).unwrap(), a, b)
            }
        };
        let mut plan = Plan::new(TenantId::new("t").unwrap(), Signal::Spans, time);
        // 0..3: one model; 3: every span with a model.
        match model_pred {
            Some(3) => plan.predicates.push(Predicate::Attr(
                Matcher::new("gen_ai.request.model", sightline_storage::MatchOp::NotEq, "").unwrap(),
            )),
            Some(m) => plan.predicates.push(Predicate::Attr(Matcher::eq("gen_ai.request.model", MODELS[m]))),
            None => {}
        }
        if error_only {
            plan.predicates.push(Predicate::Attr(Matcher::eq("status", "error")));
        }
        plan.group_by.push(GroupBy::Key("gen_ai.request.model".into()));
        if by_service {
            plan.group_by.push(GroupBy::Key("service.name".into()));
        }
        if by_status {
            plan.group_by.push(GroupBy::Key("status".into()));
        }
        if let Some(b) = bucket_min {
            plan.group_by.push(GroupBy::Time(b * MINUTE));
        }
        let agg = |func, field: Option<&str>| Aggregate { func, field: field.map(str::to_owned) };
        plan.aggregates = vec![
            agg(AggFunc::Count, None),
            agg(AggFunc::Sum, Some("gen_ai.usage.input_tokens")),
            agg(AggFunc::Avg, Some("duration")),
            agg(AggFunc::Min, Some("duration")),
            agg(AggFunc::Max, Some("gen_ai.usage.input_tokens")),
            agg(AggFunc::ErrorRatio, None),
            agg(AggFunc::Rate, None),
            agg(AggFunc::Quantile(0.9), Some("duration")),
        ];
        let got = execute(&store, &plan).unwrap();

        type Key = (String, String, String, i64);
        let mut want: BTreeMap<Key, Vec<&SpanRecord>> = BTreeMap::new();
        for s in &all {
            if s.start.0 < lo || s.start.0 >= hi { continue; }
            let model = s.gen_ai.request_model.clone().unwrap_or_default();
            match model_pred {
                Some(3) if model.is_empty() => continue,
                Some(m) if m < 3 && model != MODELS[m] => continue,
                _ => {}
            }
            if error_only && s.status_code != StatusCode::Error { continue; }
            let service = if by_service { s.service_name.clone() } else { String::new() };
            let status = if by_status { s.status_code.as_str().to_owned() } else { String::new() };
            let bucket = bucket_min.map_or(0, |b| s.start.0.div_euclid(b * MINUTE) * b * MINUTE);
            want.entry((model, service, status, bucket)).or_default().push(s);
        }
        prop_assert_eq!(got.rows.len(), want.len());
        for (row, ((model, service, status, bucket), ss)) in got.rows.iter().zip(&want) {
            let mut c = 0;
            prop_assert_eq!(&row[c], &Cell::Str(model.clone()));
            c += 1;
            if by_service { prop_assert_eq!(&row[c], &Cell::Str(service.clone())); c += 1; }
            if by_status { prop_assert_eq!(&row[c], &Cell::Str(status.clone())); c += 1; }
            if bucket_min.is_some() { prop_assert_eq!(&row[c], &Cell::Int(*bucket)); c += 1; }
            prop_assert_eq!(&row[c], &Cell::Int(ss.len() as i64));
            let toks: Vec<i64> = ss.iter().filter_map(|s| s.gen_ai.input_tokens).collect();
            if toks.is_empty() {
                prop_assert_eq!(&row[c + 1], &Cell::Null);
                prop_assert_eq!(&row[c + 4], &Cell::Null);
            } else {
                prop_assert_eq!(row[c + 1].as_f64().unwrap(), toks.iter().sum::<i64>() as f64);
                prop_assert_eq!(row[c + 4].as_f64().unwrap(), *toks.iter().max().unwrap() as f64);
            }
            let durs: Vec<i64> = ss.iter().map(|s| s.end.0 - s.start.0).collect();
            let avg = durs.iter().sum::<i64>() as f64 / durs.len() as f64;
            prop_assert!((row[c + 2].as_f64().unwrap() - avg).abs() <= 1e-9 * avg);
            prop_assert_eq!(row[c + 3].as_f64().unwrap(), *durs.iter().min().unwrap() as f64);
            let errs = ss.iter().filter(|s| s.status_code == StatusCode::Error).count();
            prop_assert!((row[c + 5].as_f64().unwrap() - errs as f64 / ss.len() as f64).abs() < 1e-12);
            // Rate divides by the bucket, else the range, else the rows' own time span.
            let secs = match (bucket_min, from_s) {
                (Some(b), _) => (b * MINUTE) as f64 / 1e9,
                (None, Some(_)) => (hi - lo) as f64 / 1e9,
                (None, None) => {
                    let (mut a, mut b) = (i64::MAX, i64::MIN);
                    for s in &all {
                        let m = s.gen_ai.request_model.clone().unwrap_or_default();
                        let keep = match model_pred {
                            Some(3) => !m.is_empty(),
                            Some(k) => m == MODELS[k],
                            None => true,
                        } && (!error_only || s.status_code == StatusCode::Error);
                        if keep { a = a.min(s.start.0); b = b.max(s.start.0); }
                    }
                    if b > a { (b - a) as f64 / 1e9 } else { 1.0 }
                }
            };
            let rate = ss.len() as f64 / secs;
            prop_assert!((row[c + 6].as_f64().unwrap() - rate).abs() <= 1e-9 * rate);
            let q = quantile(durs.iter().map(|&d| d as f64).collect(), 0.9);
            prop_assert!((row[c + 7].as_f64().unwrap() - q).abs() <= 1e-9 * q);
        }
        if time == TimeRange::ALL && !keep_last {
            prop_assert_eq!(got.explain.scan.segments_from_rollup, got.explain.scan.segments_total);
            prop_assert_eq!(got.explain.rows_scanned, 0);
        }
    }
}

/// A plan over whole minutes of flushed spans reads rollups, not rows; one that needs the rows
/// (a numeric filter) reads the rows; both agree.
#[test]
fn explain_shows_rollups() {
    let all = spans(11, 20_000);
    let (_d, store) = store_in_parts(&all, 2, false);
    let t = TenantId::new("t").unwrap();
    let mut plan = Plan::new(t, Signal::Spans, range(10, 70));
    plan.group_by = vec![GroupBy::Key("service.name".into())];
    plan.aggregates = vec![
        Aggregate {
            func: AggFunc::Count,
            field: None,
        },
        Aggregate {
            func: AggFunc::ErrorRatio,
            field: None,
        },
        Aggregate {
            func: AggFunc::Quantile(0.99),
            field: Some("duration".into()),
        },
    ];
    let fast = execute(&store, &plan).unwrap();
    // Two flushes over three hourly partitions: every segment the range touches.
    assert!(
        fast.explain.scan.segments_from_rollup >= 2,
        "{:?}",
        fast.explain
    );
    assert_eq!(fast.explain.scan.segments_read, 0);
    assert_eq!(fast.explain.rows_scanned, 0);
    assert_eq!(fast.explain.scan.rows_decoded, 0);
    let spans_in = all
        .iter()
        .filter(|s| s.start.0 >= T0 + 10 * MINUTE && s.start.0 < T0 + 70 * MINUTE)
        .count() as u64;
    assert_eq!(fast.explain.scan.rollup_spans, spans_in);
    // 3 services x 4 models x 2 statuses per minute and segment, for ~110 spans a minute.
    assert!(
        fast.explain.rollup_rows < spans_in / 3,
        "{:?}",
        fast.explain
    );
    // The same question through a filter that keeps every span reads the rows.
    let mut slow_plan = plan.clone();
    slow_plan.filters.push(FieldFilter {
        field: "duration".into(),
        op: CmpOp::Ge,
        value: 0.0,
    });
    let slow = execute(&store, &slow_plan).unwrap();
    assert_eq!(slow.explain.scan.segments_from_rollup, 0);
    assert_eq!(slow.explain.rows_scanned, spans_in);
    assert_eq!(fast.rows, slow.rows);
    // A range cutting through minutes reads rows only for its partial minutes at either end:
    // its whole minutes come from the rollups of the segments it cuts.
    let (from, to) = (T0 + 10 * MINUTE + MINUTE / 2, T0 + 69 * MINUTE + MINUTE / 3);
    let mut cut_plan = plan.clone();
    cut_plan.time = TimeRange::new(UnixNanos(from), UnixNanos(to)).unwrap();
    let cut = execute(&store, &cut_plan).unwrap();
    let count = |lo: i64, hi: i64| {
        all.iter()
            .filter(|s| s.start.0 >= lo && s.start.0 < hi)
            .count() as u64
    };
    let edges = count(from, T0 + 11 * MINUTE) + count(T0 + 69 * MINUTE, to);
    assert!(edges > 0);
    assert!(cut.explain.scan.segments_read >= 1, "{:?}", cut.explain);
    assert_eq!(cut.explain.rows_scanned, edges, "{:?}", cut.explain);
    assert_eq!(
        cut.explain.scan.rollup_spans,
        count(T0 + 11 * MINUTE, T0 + 69 * MINUTE),
        "{:?}",
        cut.explain
    );
    // The same answer as from the rows.
    let mut cut_rows = cut_plan.clone();
    cut_rows.filters = slow_plan.filters.clone();
    let rows = execute(&store, &cut_rows).unwrap();
    assert_eq!(rows.explain.scan.segments_from_rollup, 0);
    assert_eq!(cut.rows, rows.rows);
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
