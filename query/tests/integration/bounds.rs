//! Query size limits: the largest texts `sightline_query::bounds` admits go through every
//! parser, evaluator and promql-parser's `prettify` on a thread with a small stack
//! (`bounds::SAFE_STACK_BYTES`), and texts past a limit are refused with `QueryError::Parse`
//! before anything recursive runs.

use std::sync::Arc;

use sightline_query::QueryError;
use sightline_query::bounds::{Language, MAX_DEPTH, MAX_OPERATORS, SAFE_STACK_BYTES, measure};
use sightline_query::logs::Direction;
use sightline_query::logs::logql::eval::{QueryValue, RangeParams, query_instant, query_range};
use sightline_query::logs::logql::{self, parse_selector};
use sightline_query::promql::value::RawSeries;
use sightline_query::promql::{Budget, MemorySource, QueryResult, instant_query, range_query};
use sightline_query::traces::traceql::{self, parse_tags};
use sightline_query::traces::{SpanQuery, search_spans};
use sightline_storage::{
    AttrValue, Deadline, FsyncPolicy, LogRecord, SpanId, SpanRecord, Store, StoreConfig, TenantId,
    TimeRange, TraceId, UnixNanos,
};

const BASE: i64 = 1_700_000_000_000_000_000;

/// Runs `f` on a thread with the stack the limits are sized for.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(SAFE_STACK_BYTES)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

/// `n` nested calls of `open` around `inner`.
fn nest(open: &str, inner: &str, close: &str, n: usize) -> String {
    format!("{}{inner}{}", open.repeat(n), close.repeat(n))
}

/// `n` copies of `term` joined by `op` (`n - 1` operators).
fn chain(term: &str, op: &str, n: usize) -> String {
    vec![term; n].join(op)
}

fn assert_refused(r: Result<impl std::fmt::Debug, QueryError>, what: &str) {
    match r {
        Err(QueryError::Parse(msg)) => assert!(msg.contains("the limit is"), "{what}: {msg}"),
        other => panic!("{what}: expected a parse error naming the limit, got {other:?}"),
    }
}

/// `m{job="a"}` = 2 at every minute of the first hour.
fn metrics() -> MemorySource {
    let mut labels = vec![
        ("__name__".to_owned(), "m".to_owned()),
        ("job".to_owned(), "a".to_owned()),
    ];
    labels.sort();
    let timestamps: Vec<i64> = (0..60).map(|i| i * 60_000).collect();
    MemorySource {
        series: vec![RawSeries {
            labels: Arc::new(labels),
            values: vec![2.0; timestamps.len()],
            timestamps,
        }],
    }
}

fn instant_value(src: &MemorySource, q: &str) -> f64 {
    match instant_query(src, q, 600_000, &Budget::default()).unwrap() {
        QueryResult::Scalar(v) => v[0].1,
        QueryResult::Vector(v) => {
            assert_eq!(v.len(), 1, "{q}");
            v[0].points[0].1
        }
        other => panic!("{q}: {other:?}"),
    }
}

fn range_values(src: &MemorySource, q: &str) -> Vec<f64> {
    match range_query(src, q, 0, 600_000, 60_000, &Budget::default()).unwrap() {
        QueryResult::Matrix(m) => {
            assert_eq!(m.len(), 1, "{q}");
            m[0].points.iter().map(|p| p.1).collect()
        }
        other => panic!("{q}: {other:?}"),
    }
}

#[test]
fn promql_at_the_limits_parses_prettifies_and_evaluates_on_a_small_stack() {
    let ops = MAX_OPERATORS;
    let cases: Vec<(String, f64)> = vec![
        (chain("1", "+", ops + 1), (ops + 1) as f64),
        (chain("m", " + ", ops + 1), 2.0 * (ops + 1) as f64),
        (chain("m", " or ", ops + 1), 2.0),
        (chain("1", "^", ops + 1), 1.0),
        (
            chain("m", " * on(job) ", ops + 1),
            2f64.powi(ops as i32 + 1),
        ),
        (nest("abs(", "m", ")", MAX_DEPTH), 2.0),
        (nest("(", "1", ")", MAX_DEPTH), 1.0),
        (nest("sum by (job) (", "m", ")", MAX_DEPTH / 2), 2.0),
        (nest("-(", "m", ")", MAX_DEPTH), 2.0),
        // Deepest tree: brackets to the limit around an operator chain to the limit.
        (
            nest("abs(", &chain("m", "-", ops + 1), ")", MAX_DEPTH),
            2.0 * (ops as f64 - 1.0),
        ),
        (
            nest("(", &chain("-m", "/", ops / 2), ")", MAX_DEPTH),
            if (ops / 2).is_multiple_of(2) {
                1.0
            } else {
                -1.0
            } * 2f64.powi(2 - (ops / 2) as i32),
        ),
    ];
    on_small_stack(move || {
        let src = metrics();
        for (q, want) in &cases {
            let expr = sightline_query::promql::parse(q).unwrap();
            // Prettified, the same operators come back (indented, so it may be longer than
            // the limit on length).
            let pretty = expr.prettify();
            let ops = |t: &str| measure(t, Language::PromQl).operators;
            assert_eq!(ops(&pretty), ops(q), "{q}");
            drop(expr);
            assert_eq!(instant_value(&src, q), *want, "{q}");
            assert!(range_values(&src, q).iter().all(|v| v == want), "{q}");
        }
    });
}

#[test]
fn promql_past_the_limits_is_refused_before_parsing() {
    let cases = vec![
        ("2,000-term sum", chain("1", "+", 2000)),
        ("2,000 nested abs(", nest("abs(", "m", ")", 2000)),
        ("8,000 parentheses", nest("(", "1", ")", 8000)),
        ("513 operators", chain("1", "+", MAX_OPERATORS + 2)),
        ("65 levels", nest("(", "1", ")", MAX_DEPTH + 1)),
        ("2,000 set operators", chain("m", " and ", 2000)),
        ("2,000 unary minus", format!("{}1", "-".repeat(2000))),
        ("2,000 subqueries", format!("m{}", "[1m:]".repeat(2000))),
        ("100 KiB", format!("m{{a=\"{}\"}}", "x".repeat(100 * 1024))),
    ];
    on_small_stack(move || {
        let src = metrics();
        for (what, q) in &cases {
            assert_refused(sightline_query::promql::parse(q), what);
            assert_refused(instant_query(&src, q, 0, &Budget::default()), what);
            assert_refused(
                range_query(&src, q, 0, 60_000, 60_000, &Budget::default()),
                what,
            );
        }
    });
}

fn open_store(dir: &std::path::Path) -> Store {
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

fn log(i: i64, body: &str) -> LogRecord {
    LogRecord {
        time: UnixNanos(BASE + i * 1_000_000_000),
        observed_time: UnixNanos(BASE + i * 1_000_000_000),
        severity_number: 9,
        severity_text: "INFO".into(),
        body: AttrValue::Str(body.into()),
        trace_id: None,
        span_id: None,
        flags: 0,
        service_name: "api".into(),
        scope_name: String::new(),
        event_name: String::new(),
        resource_attributes: Vec::new(),
        attributes: Vec::new(),
    }
}

fn metric_value(out: QueryValue) -> f64 {
    match out {
        QueryValue::Vector(v) => {
            assert_eq!(v.len(), 1);
            v[0].points[0].1
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn logql_at_the_limits_parses_and_evaluates_on_a_small_stack() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path());
    let t = TenantId::new("bounds").unwrap();
    let logs: Vec<LogRecord> = (0..10).map(|i| log(i, "a request")).collect();
    store.append_logs(&t, &logs).unwrap();
    let store = Arc::new(store);
    let ops = MAX_OPERATORS;
    let count = r#"count_over_time({service_name="api"}[1m])"#;
    let metric_cases: Vec<(String, f64)> = vec![
        (chain("vector(1)", "+", ops + 1), (ops + 1) as f64),
        (chain("vector(1)", "*", ops + 1), 1.0),
        (nest("(", "vector(2)", ")", MAX_DEPTH - 1), 2.0),
        (nest("sum(", count, ")", MAX_DEPTH - 2), 10.0),
        (
            nest("(", &chain("vector(1)", "-", ops + 1), ")", MAX_DEPTH - 1),
            1.0 - ops as f64,
        ),
        (
            nest(
                "sum by (level) (",
                &chain(count, " + ", 64),
                ")",
                MAX_DEPTH - 3,
            ),
            640.0,
        ),
    ];
    let stages = format!(r#"{{service_name="api"}}{}"#, r#" |= "a""#.repeat(ops));
    on_small_stack(move || {
        let time = BASE + 10_000_000_000;
        for (q, want) in &metric_cases {
            let e = logql::parse(q).unwrap();
            let out = query_instant(&store, &t, &e, time, &Deadline::none()).unwrap();
            assert_eq!(metric_value(out.value), *want, "{q}");
        }
        let e = logql::parse(&stages).unwrap();
        let p = RangeParams {
            start_ns: BASE,
            end_ns: time,
            step_ns: 1_000_000_000,
            limit: 100,
            direction: Direction::Backward,
        };
        let QueryValue::Streams(streams) = query_range(&store, &t, &e, p, &Deadline::none())
            .unwrap()
            .value
        else {
            panic!("a log query returns streams");
        };
        assert_eq!(streams.iter().map(|s| s.entries.len()).sum::<usize>(), 10);
        let selector = nest("{", r#"service_name="api""#, "}", 1);
        assert_eq!(parse_selector(&selector).unwrap().len(), 1);
    });
}

#[test]
fn logql_past_the_limits_is_refused_before_parsing() {
    let cases = vec![
        ("10,000 parentheses", nest("(", "vector(1)", ")", 10_000)),
        ("10,000 nested sum(", nest("sum(", "vector(1)", ")", 10_000)),
        ("2,000-term sum", chain("vector(1)", "+", 2000)),
        (
            "10,000 line filters",
            format!(r#"{{a="b"}}{}"#, r#" |= "x""#.repeat(10_000)),
        ),
        ("65 levels", nest("(", "vector(1)", ")", MAX_DEPTH)),
    ];
    on_small_stack(move || {
        for (what, q) in &cases {
            assert_refused(logql::parse(q), what);
            assert_refused(parse_selector(q), what);
        }
    });
}

#[test]
fn traceql_at_the_limits_parses_and_searches_on_a_small_stack() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path());
    let t = TenantId::new("bounds").unwrap();
    let spans: Vec<SpanRecord> = (0..4u8)
        .map(|i| {
            let mut s = SpanRecord::new(
                TraceId([i + 1; 16]),
                SpanId([i + 1; 8]),
                "api",
                "chat",
                UnixNanos(BASE + i64::from(i) * 1_000_000),
                UnixNanos(BASE + i64::from(i) * 1_000_000 + 5_000_000),
            );
            let tier = if i % 2 == 0 { "pro" } else { "free" };
            s.attributes
                .push(("tier".into(), AttrValue::Str(tier.into())));
            s
        })
        .collect();
    store.append_spans(&t, &spans).unwrap();
    let store = Arc::new(store);
    let q = format!(
        "{{ {} }}",
        chain(r#"span.tier = "pro""#, " && ", MAX_OPERATORS + 1)
    );
    let tags = chain("tier=pro", " ", 2000);
    on_small_stack(move || {
        let conds = traceql::parse(&q).unwrap();
        assert_eq!(conds.len(), MAX_OPERATORS + 1);
        let mut sq = SpanQuery::new(TimeRange::ALL);
        sq.conds = conds;
        let r = search_spans(&store, &t, &sq).unwrap();
        assert_eq!(r.spans.len(), 2);
        assert!(r.spans.iter().all(|s| s.start_unix_nano % 2_000_000 == 0));
        assert_eq!(parse_tags(&tags).unwrap().len(), 2000);
    });
}

#[test]
fn traceql_past_the_limits_is_refused_before_parsing() {
    let cases = vec![
        (
            "2,000 conditions",
            format!("{{ {} }}", chain(".a = 1", " && ", 2000)),
        ),
        ("10,000 braces", nest("{", ".a = 1", "}", 10_000)),
        (
            "10,000 parentheses",
            format!("{{ {}.a = 1 }}", "(".repeat(10_000)),
        ),
        ("2,000 spanset operators", chain("{ .a = 1 }", " || ", 2000)),
        (
            "100 KiB",
            format!("{{ .a = \"{}\" }}", "x".repeat(100 * 1024)),
        ),
    ];
    on_small_stack(move || {
        for (what, q) in &cases {
            assert_refused(traceql::parse(q), what);
        }
        assert_refused(parse_tags(&"a=b ".repeat(20_000)), "80 KB of tags");
    });
}
