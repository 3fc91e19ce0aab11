//! Trace search against a real store: a property test comparing search results with a
//! brute-force filter over every span (some flushed to segments, some still in memtables),
//! pruning assertions through the scan statistics, trace lookup and RED aggregates.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use sightline_query::traces::{
    CmpOp, Cond, GroupBy, RedQuery, Scope, SortBy, SpanQuery, red, search_spans, search_traces,
    trace_by_id,
};
use sightline_storage::{
    AttrValue, Deadline, FsyncPolicy, MatchOp, SpanId, SpanKind, SpanRecord, StatusCode, Store,
    StoreConfig, TenantId, TimeRange, TraceId, UnixNanos,
};

const HOUR: i64 = 3_600_000_000_000;
const BASE: i64 = 1_700_000_000_000_000_000 / HOUR * HOUR;

fn open(dir: &std::path::Path) -> Store {
    Store::open(
        dir,
        StoreConfig {
            background: false,
            fsync: FsyncPolicy::Never,
            ..StoreConfig::default()
        },
    )
    .unwrap()
}

fn tenant() -> TenantId {
    TenantId::new("t1").unwrap()
}

const SERVICES: &[&str] = &["api", "rag", "llm"];
const NAMES: &[&str] = &["chat", "embed", "GET /x"];
const MODELS: &[&str] = &["gpt-4o", "claude-3"];
/// Response models; `model=` filters ask for any of these and [`MODELS`].
const RESPONSES: &[&str] = &["gpt-4o-2024-08-06", "gpt-4o", "claude-3"];
const TIERS: &[&str] = &["free", "pro"];

#[derive(Clone, Debug)]
struct Gen {
    trace: u8,
    service: usize,
    name: usize,
    status: u8,
    start_ms: i64,
    dur_ms: i64,
    model: Option<usize>,
    response: Option<usize>,
    input_tokens: Option<i64>,
    entropy: Option<f64>,
    tier_span: Option<usize>,
    tier_res: Option<usize>,
    score: Option<i64>,
}

fn gen_span() -> impl Strategy<Value = Gen> {
    (
        (
            0u8..6,
            0..SERVICES.len(),
            0..NAMES.len(),
            0u8..3,
            0i64..(3 * 3600 * 1000),
            0i64..5000,
        ),
        (
            proptest::option::of(0..MODELS.len()),
            proptest::option::of(0..RESPONSES.len()),
            proptest::option::of(0i64..2000),
            proptest::option::of(0.0f64..4.0),
            proptest::option::of(0..TIERS.len()),
            proptest::option::of(0..TIERS.len()),
            proptest::option::of(-5i64..5),
        ),
    )
        .prop_map(
            |(
                (trace, service, name, status, start_ms, dur_ms),
                (model, response, input_tokens, entropy, tier_span, tier_res, score),
            )| Gen {
                trace,
                service,
                name,
                status,
                start_ms,
                dur_ms,
                model,
                response,
                input_tokens,
                entropy,
                tier_span,
                tier_res,
                score,
            },
        )
}

fn record(i: usize, g: &Gen) -> SpanRecord {
    let start = BASE + g.start_ms * 1_000_000;
    let mut s = SpanRecord::new(
        TraceId([g.trace + 1; 16]),
        SpanId(((i as u64) + 1).to_be_bytes()),
        SERVICES[g.service],
        NAMES[g.name],
        UnixNanos(start),
        UnixNanos(start + g.dur_ms * 1_000_000),
    );
    s.kind = SpanKind::Server;
    s.status_code = StatusCode::from_code(i32::from(g.status));
    s.gen_ai.request_model = g.model.map(|m| MODELS[m].to_owned());
    s.gen_ai.response_model = g.response.map(|m| RESPONSES[m].to_owned());
    s.gen_ai.input_tokens = g.input_tokens;
    s.quality.entropy_mean = g.entropy;
    if let Some(t) = g.tier_span {
        s.attributes
            .push(("tier".into(), AttrValue::Str(TIERS[t].into())));
    }
    if let Some(t) = g.tier_res {
        s.resource_attributes
            .push(("tier".into(), AttrValue::Str(TIERS[t].into())));
    }
    if let Some(v) = g.score {
        s.attributes.push(("score".into(), AttrValue::Int(v)));
    }
    s
}

/// A filter both the engine and the reference understand.
#[derive(Clone, Debug)]
enum F {
    Service(usize),
    Name(usize),
    Status(u8),
    MinDur(i64),
    MaxDur(i64),
    Model(usize),
    ModelRe,
    /// Request or response model equals `RESPONSES[i]` (storage's `AnyOf`).
    ModelAny(usize),
    /// Request model `MODELS[m]` or span attribute tier `TIERS[t]` (evaluated by the query).
    ModelOrTier(usize, usize),
    MinTokens(i64),
    MaxEntropy(f64),
    TierAny(usize),
    TierSpan(usize),
    TierRes(usize),
    TierNot(usize),
    ScoreGt(i64),
}

fn gen_filter() -> impl Strategy<Value = F> {
    prop_oneof![
        (0..SERVICES.len()).prop_map(F::Service),
        (0..NAMES.len()).prop_map(F::Name),
        (0u8..3).prop_map(F::Status),
        (0i64..5000).prop_map(F::MinDur),
        (0i64..5000).prop_map(F::MaxDur),
        (0..MODELS.len()).prop_map(F::Model),
        Just(F::ModelRe),
        (0..RESPONSES.len()).prop_map(F::ModelAny),
        (0..MODELS.len(), 0..TIERS.len()).prop_map(|(m, t)| F::ModelOrTier(m, t)),
        (0i64..2000).prop_map(F::MinTokens),
        (0.0f64..4.0).prop_map(F::MaxEntropy),
        (0..TIERS.len()).prop_map(F::TierAny),
        (0..TIERS.len()).prop_map(F::TierSpan),
        (0..TIERS.len()).prop_map(F::TierRes),
        (0..TIERS.len()).prop_map(F::TierNot),
        (-5i64..5).prop_map(F::ScoreGt),
    ]
}

fn cond(f: &F) -> Cond {
    let s = |scope, k: &str, op, v: &str| Cond::string(scope, k, op, v).unwrap();
    match f {
        F::Service(i) => s(Scope::Resource, "service.name", MatchOp::Eq, SERVICES[*i]),
        F::Name(i) => s(Scope::Any, "name", MatchOp::Eq, NAMES[*i]),
        F::Status(c) => Cond::status(StatusCode::from_code(i32::from(*c))),
        F::MinDur(ms) => Cond::number(Scope::Any, "duration", CmpOp::Ge, (*ms * 1_000_000) as f64),
        F::MaxDur(ms) => Cond::number(Scope::Any, "duration", CmpOp::Lt, (*ms * 1_000_000) as f64),
        F::Model(i) => s(Scope::Span, "gen_ai.request.model", MatchOp::Eq, MODELS[*i]),
        F::ModelRe => s(Scope::Any, "gen_ai.request.model", MatchOp::Regex, "gpt-.*"),
        F::ModelAny(i) => Cond::any(vec![
            s(
                Scope::Any,
                "gen_ai.request.model",
                MatchOp::Eq,
                RESPONSES[*i],
            ),
            s(
                Scope::Any,
                "gen_ai.response.model",
                MatchOp::Eq,
                RESPONSES[*i],
            ),
        ])
        .unwrap(),
        F::ModelOrTier(m, t) => Cond::any(vec![
            s(Scope::Any, "gen_ai.request.model", MatchOp::Eq, MODELS[*m]),
            s(Scope::Span, "tier", MatchOp::Eq, TIERS[*t]),
        ])
        .unwrap(),
        F::MinTokens(n) => Cond::number(
            Scope::Any,
            "gen_ai.usage.input_tokens",
            CmpOp::Ge,
            *n as f64,
        ),
        F::MaxEntropy(e) => Cond::number(Scope::Any, "sightline.entropy.mean", CmpOp::Le, *e),
        F::TierAny(i) => s(Scope::Any, "tier", MatchOp::Eq, TIERS[*i]),
        F::TierSpan(i) => s(Scope::Span, "tier", MatchOp::Eq, TIERS[*i]),
        F::TierRes(i) => s(Scope::Resource, "tier", MatchOp::Eq, TIERS[*i]),
        F::TierNot(i) => s(Scope::Any, "tier", MatchOp::NotEq, TIERS[*i]),
        F::ScoreGt(v) => Cond::number(Scope::Span, "score", CmpOp::Gt, *v as f64),
    }
}

/// The reference: each filter evaluated on the generated values directly.
fn holds(f: &F, g: &Gen) -> bool {
    let tier_any = g.tier_span.or(g.tier_res);
    match f {
        F::Service(i) => g.service == *i,
        F::Name(i) => g.name == *i,
        F::Status(c) => g.status == *c,
        F::MinDur(ms) => g.dur_ms >= *ms,
        F::MaxDur(ms) => g.dur_ms < *ms,
        F::Model(i) => g.model == Some(*i),
        F::ModelRe => g.model.is_some_and(|m| MODELS[m].starts_with("gpt-")),
        F::ModelAny(i) => {
            g.model.is_some_and(|m| MODELS[m] == RESPONSES[*i]) || g.response == Some(*i)
        }
        F::ModelOrTier(m, t) => g.model == Some(*m) || g.tier_span == Some(*t),
        F::MinTokens(n) => g.input_tokens.is_some_and(|t| t >= *n),
        F::MaxEntropy(e) => g.entropy.is_some_and(|x| x <= *e),
        F::TierAny(i) => tier_any == Some(*i),
        F::TierSpan(i) => g.tier_span == Some(*i),
        F::TierRes(i) => g.tier_res == Some(*i),
        F::TierNot(i) => tier_any != Some(*i),
        F::ScoreGt(v) => g.score.is_some_and(|s| s > *v),
    }
}

fn load(store: &Store, gens: &[Gen], flushed: usize) -> Vec<SpanRecord> {
    let recs: Vec<SpanRecord> = gens.iter().enumerate().map(|(i, g)| record(i, g)).collect();
    let (a, b) = recs.split_at(flushed.min(recs.len()));
    // Flushed in two appends with a flush each, so there are several segments.
    let (a1, a2) = a.split_at(a.len() / 2);
    for part in [a1, a2] {
        if !part.is_empty() {
            store.append_spans(&tenant(), part).unwrap();
            store.flush().unwrap();
        }
    }
    if !b.is_empty() {
        store.append_spans(&tenant(), b).unwrap();
    }
    recs
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn search_equals_brute_force(
        gens in prop::collection::vec(gen_span(), 1..60),
        flushed_frac in 0.0f64..1.0,
        filters in prop::collection::vec(gen_filter(), 0..4),
        window in proptest::option::of((0i64..3, 1i64..3)),
        by_duration in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let flushed = (gens.len() as f64 * flushed_frac) as usize;
        let recs = load(&store, &gens, flushed);
        let time = match window {
            Some((h, len)) => TimeRange::new(UnixNanos(BASE + h * HOUR), UnixNanos(BASE + (h + len) * HOUR)).unwrap(),
            None => TimeRange::ALL,
        };
        let mut q = SpanQuery::new(time);
        q.conds = filters.iter().map(cond).collect();
        q.limit = 10_000;
        q.sort = if by_duration { SortBy::Duration } else { SortBy::Start };

        let expected: Vec<&SpanRecord> = recs
            .iter()
            .zip(&gens)
            .filter(|(r, g)| time.contains(r.start) && filters.iter().all(|f| holds(f, g)))
            .map(|(r, _)| r)
            .collect();

        // Span search: same spans, in the documented order.
        let got = search_spans(&store, &tenant(), &q).unwrap();
        let mut want: Vec<(i64, TraceId, SpanId)> = expected
            .iter()
            .map(|r| (if by_duration { -r.duration_nanos() } else { -r.start.0 }, r.trace_id, r.span_id))
            .collect();
        want.sort();
        let got_ids: Vec<(TraceId, SpanId)> = got.spans.iter().map(|s| (s.trace_id, s.span_id)).collect();
        let want_ids: Vec<(TraceId, SpanId)> = want.iter().map(|w| (w.1, w.2)).collect();
        prop_assert_eq!(got_ids, want_ids);
        prop_assert_eq!(got.total_matched, expected.len());
        // Storage returns at least the matching rows (conditions it cannot evaluate are applied after).
        prop_assert!(got.stats.rows_returned as usize >= expected.len());

        // Trace search: same traces with the same matched counts; summaries from all spans.
        let traces = search_traces(&store, &tenant(), &q).unwrap();
        let mut per_trace: BTreeMap<TraceId, usize> = BTreeMap::new();
        for r in &expected {
            *per_trace.entry(r.trace_id).or_default() += 1;
        }
        let got_traces: BTreeMap<TraceId, usize> = traces.traces.iter().map(|t| (t.trace_id, t.matched)).collect();
        prop_assert_eq!(&got_traces, &per_trace);
        prop_assert_eq!(traces.total_spans, expected.len());
        for t in &traces.traces {
            let all: Vec<&SpanRecord> = recs.iter().filter(|r| r.trace_id == t.trace_id).collect();
            let start = all.iter().map(|r| r.start.0).min().unwrap();
            let end = all.iter().map(|r| r.end.0).max().unwrap();
            prop_assert_eq!(t.start_unix_nano, start);
            prop_assert_eq!(t.duration_nano, end - start);
            prop_assert_eq!(t.span_count, all.len());
            prop_assert!(t.spans.len() <= q.spans_per_trace);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// RED over flushed spans (answered from segment rollups where the conditions allow) equals
    /// RED over the same spans unflushed (read row by row): counts, errors, rates and exact
    /// latency quantiles per group and bucket.
    #[test]
    fn red_from_rollups_equals_red_from_rows(
        gens in prop::collection::vec(gen_span(), 1..120),
        filters in prop::collection::vec(gen_filter(), 0..2),
        group in 0usize..4,
        step_min in prop::sample::select(vec![1i64, 5, 60]),
        from_h in 0i64..2,
    ) {
        let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (flushed, unflushed) = (open(d1.path()), open(d2.path()));
        load(&flushed, &gens, gens.len());
        load(&unflushed, &gens, 0);
        let q = RedQuery {
            time: TimeRange::new(UnixNanos(BASE + from_h * HOUR), UnixNanos(BASE + (from_h + 2) * HOUR)).unwrap(),
            step_nanos: step_min * 60_000_000_000,
            group_by: [GroupBy::Service, GroupBy::Model, GroupBy::Operation, GroupBy::Name][group],
            conds: filters.iter().map(cond).collect(),
            deadline: Deadline::none(),
        };
        let a = red(&flushed, &tenant(), &q).unwrap();
        let b = red(&unflushed, &tenant(), &q).unwrap();
        prop_assert_eq!(a.series.len(), b.series.len());
        for (x, y) in a.series.iter().zip(&b.series) {
            prop_assert_eq!(&x.group, &y.group);
            prop_assert_eq!(&x.total, &y.total);
            prop_assert_eq!(&x.buckets, &y.buckets);
        }
        prop_assert_eq!(b.stats.segments_from_rollup, 0);
        if filters.is_empty() && !a.series.is_empty() {
            prop_assert!(a.stats.segments_from_rollup > 0, "{:?}", a.stats);
            prop_assert_eq!(a.stats.rows_decoded, 0);
        }
    }
}

fn span(trace: u8, n: u64, service: &str, start: i64, dur: i64) -> SpanRecord {
    SpanRecord::new(
        TraceId([trace; 16]),
        SpanId(n.to_be_bytes()),
        service,
        "op",
        UnixNanos(start),
        UnixNanos(start + dur),
    )
}

#[test]
fn pruning_shows_in_the_stats() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    // Three hours, one segment per service and hour.
    let mut n = 1;
    for h in 0..3 {
        for (i, svc) in ["api", "rag"].iter().enumerate() {
            let spans: Vec<SpanRecord> = (0..50)
                .map(|k| {
                    n += 1;
                    span(
                        10 * h as u8 + i as u8 + 1,
                        n,
                        svc,
                        BASE + h * HOUR + k * 1_000_000,
                        1_000,
                    )
                })
                .collect();
            store.append_spans(&tenant(), &spans).unwrap();
            store.flush().unwrap();
        }
    }
    // By service: the other service's segments are pruned by postings.
    let q = SpanQuery::new(TimeRange::ALL)
        .with(Cond::string(Scope::Resource, "service.name", MatchOp::Eq, "rag").unwrap());
    let r = search_spans(&store, &tenant(), &q).unwrap();
    assert_eq!(r.total_matched, 150);
    assert_eq!(r.stats.segments_total, 6);
    assert_eq!(r.stats.segments_pruned_by_index, 3, "{:?}", r.stats);
    // By time: two of three hours pruned.
    let q =
        SpanQuery::new(TimeRange::new(UnixNanos(BASE + HOUR), UnixNanos(BASE + 2 * HOUR)).unwrap());
    let r = search_spans(&store, &tenant(), &q).unwrap();
    assert_eq!(r.total_matched, 100);
    assert_eq!(r.stats.segments_pruned_by_time, 4, "{:?}", r.stats);
    // A numeric condition cannot prune: every segment is read, rows are filtered after.
    let q = SpanQuery::new(TimeRange::ALL).with(Cond::number(
        Scope::Any,
        "duration",
        CmpOp::Gt,
        5_000.0,
    ));
    let r = search_spans(&store, &tenant(), &q).unwrap();
    assert_eq!(r.total_matched, 0);
    assert_eq!(r.stats.segments_read, 6);
    // Trace search adds one pruned lookup per trace returned.
    let q = SpanQuery::new(TimeRange::ALL)
        .with(Cond::string(Scope::Any, "service.name", MatchOp::Eq, "api").unwrap());
    let t = search_traces(&store, &tenant(), &q).unwrap();
    assert_eq!(t.total_traces, 3);
    assert_eq!(t.traces.len(), 3);
}

#[test]
fn trace_by_id_reads_every_span_with_structure() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut root = span(7, 1, "api", BASE, 100);
    root.events.push(sightline_storage::SpanEvent {
        time: UnixNanos(BASE + 5),
        name: "ev".into(),
        attributes: vec![("k".into(), AttrValue::Int(1))],
    });
    let mut child = span(7, 2, "llm", BASE + 10, 80);
    child.parent_span_id = Some(SpanId(1u64.to_be_bytes()));
    let mut orphan = span(7, 3, "llm", BASE + 20, 10);
    orphan.parent_span_id = Some(SpanId(99u64.to_be_bytes()));
    store
        .append_spans(&tenant(), &[root.clone(), orphan.clone()])
        .unwrap();
    store.flush().unwrap();
    store
        .append_spans(&tenant(), std::slice::from_ref(&child))
        .unwrap();
    let v = trace_by_id(&store, &tenant(), TraceId([7; 16]), &Deadline::none())
        .unwrap()
        .unwrap();
    assert_eq!(v.spans, vec![root, child, orphan]);
    assert_eq!(v.root, Some(SpanId(1u64.to_be_bytes())));
    assert_eq!(v.orphans, vec![SpanId(3u64.to_be_bytes())]);
    let total: i64 = v
        .critical_path
        .iter()
        .map(|s| s.end_unix_nano - s.start_unix_nano)
        .sum();
    assert_eq!(total, 100);
    assert_eq!(v.critical_path.len(), 3);
    assert!(
        trace_by_id(&store, &tenant(), TraceId([8; 16]), &Deadline::none())
            .unwrap()
            .is_none()
    );
    let other = TenantId::new("t2").unwrap();
    assert!(
        trace_by_id(&store, &other, TraceId([7; 16]), &Deadline::none())
            .unwrap()
            .is_none()
    );
}

#[test]
fn red_aggregates_per_group_and_bucket() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut spans = Vec::new();
    // Model a: 10 spans in minute 0 with durations 1..=10 ms, 2 errors; model b: 4 in minute 1.
    for i in 0..10i64 {
        let mut s = span(
            1,
            i as u64 + 1,
            "api",
            BASE + i * 1_000_000_000,
            (i + 1) * 1_000_000,
        );
        s.gen_ai.request_model = Some("a".into());
        if i < 2 {
            s.status_code = StatusCode::Error;
        }
        spans.push(s);
    }
    for i in 0..4i64 {
        let mut s = span(
            2,
            100 + i as u64,
            "api",
            BASE + 60_000_000_000 + i,
            2_000_000,
        );
        s.gen_ai.request_model = Some("b".into());
        spans.push(s);
    }
    store.append_spans(&tenant(), &spans[..7]).unwrap();
    store.flush().unwrap();
    store.append_spans(&tenant(), &spans[7..]).unwrap();
    let q = RedQuery {
        time: TimeRange::new(UnixNanos(BASE), UnixNanos(BASE + 120_000_000_000)).unwrap(),
        step_nanos: 60_000_000_000,
        group_by: GroupBy::Model,
        conds: Vec::new(),
        deadline: Deadline::none(),
    };
    let r = red(&store, &tenant(), &q).unwrap();
    let groups: BTreeSet<&str> = r.series.iter().map(|s| s.group.as_str()).collect();
    assert_eq!(groups, BTreeSet::from(["a", "b"]));
    let a = &r.series[0];
    assert_eq!(a.buckets.len(), 1);
    let p = &a.buckets[0];
    assert_eq!((p.count, p.errors), (10, 2));
    assert!((p.rate - 10.0 / 60.0).abs() < 1e-12);
    assert!((p.error_ratio - 0.2).abs() < 1e-12);
    // durations 1..=10 ms: ranks 4.5, 8.1 and 8.91
    assert!((p.p50_ms - 5.5).abs() < 1e-9);
    assert!((p.p90_ms - 9.1).abs() < 1e-9);
    assert!((p.p99_ms - 9.91).abs() < 1e-9);
    let b = &r.series[1];
    assert_eq!(b.buckets[0].start_unix_nano, BASE + 60_000_000_000);
    assert_eq!(b.total.count, 4);
    assert!((b.total.rate - 4.0 / 120.0).abs() < 1e-12);
    // Unbounded ranges and zero steps are refused.
    assert!(
        red(
            &store,
            &tenant(),
            &RedQuery {
                time: TimeRange::ALL,
                ..q.clone()
            }
        )
        .is_err()
    );
    assert!(red(&store, &tenant(), &RedQuery { step_nanos: 0, ..q }).is_err());
}
