//! Deadlines of the log, trace and plan queries: with a deadline in the future each answers as
//! without one; once it has passed (or the request was cancelled) each fails with
//! `QueryError::Timeout` instead of scanning on.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use sightline_query::QueryError;
use sightline_query::logs::logql::eval::{
    QueryValue, RangeParams, query_instant, query_range, select_lines,
};
use sightline_query::logs::logql::parse;
use sightline_query::logs::{Direction, HistogramRequest, LogFilter, SearchRequest};
use sightline_query::plan::{AggFunc, Aggregate, Cell, GroupBy, Plan, execute};
use sightline_query::traces::{
    GroupBy as RedGroup, RedQuery, Scope, SpanQuery, search_spans, search_traces, tag_names,
    tag_values,
};
use sightline_storage::{
    AttrValue, Deadline, FsyncPolicy, LogRecord, Matcher, Signal, SpanId, SpanRecord, Store,
    StoreConfig, TenantId, TimeRange, TraceId, UnixNanos,
};

const SEC: i64 = 1_000_000_000;
const BASE: i64 = 1_700_000_000 * SEC;

fn passed() -> Deadline {
    Deadline::at(Instant::now() - Duration::from_millis(1))
}

fn cancelled() -> Deadline {
    Deadline::none().with_cancel(Arc::new(AtomicBool::new(true)))
}

fn later() -> Deadline {
    Deadline::after(Duration::from_secs(3600))
}

fn is_timeout<T: std::fmt::Debug>(r: Result<T, QueryError>) -> bool {
    matches!(r, Err(QueryError::Timeout))
}

/// 20 log lines and 20 spans of service `api` in `[BASE, BASE + 20 s)`, half flushed to a
/// segment and half in the memtable.
fn store(dir: &std::path::Path) -> (Store, TenantId) {
    let store = Store::open(
        dir,
        StoreConfig {
            background: false,
            fsync: FsyncPolicy::Never,
            ..StoreConfig::default()
        },
    )
    .unwrap();
    let t = TenantId::new("deadlines").unwrap();
    let logs: Vec<LogRecord> = (0..20)
        .map(|i| LogRecord {
            time: UnixNanos(BASE + i * SEC),
            observed_time: UnixNanos(BASE + i * SEC),
            severity_number: 9,
            severity_text: "INFO".into(),
            body: AttrValue::Str(format!("request {i}")),
            trace_id: None,
            span_id: None,
            flags: 0,
            service_name: "api".into(),
            scope_name: String::new(),
            event_name: String::new(),
            resource_attributes: Vec::new(),
            attributes: Vec::new(),
        })
        .collect();
    let spans: Vec<SpanRecord> = (0..20u8)
        .map(|i| {
            let start = BASE + i64::from(i) * SEC;
            let mut s = SpanRecord::new(
                TraceId([i + 1; 16]),
                SpanId([i + 1; 8]),
                "api",
                "chat",
                UnixNanos(start),
                UnixNanos(start + 5_000_000),
            );
            s.attributes
                .push(("tier".into(), AttrValue::Str("pro".into())));
            s
        })
        .collect();
    store.append_logs(&t, &logs[..10]).unwrap();
    store.append_spans(&t, &spans[..10]).unwrap();
    store.flush().unwrap();
    store.append_logs(&t, &logs[10..]).unwrap();
    store.append_spans(&t, &spans[10..]).unwrap();
    (store, t)
}

fn range() -> TimeRange {
    TimeRange::new(UnixNanos(BASE), UnixNanos(BASE + 60 * SEC)).unwrap()
}

#[test]
fn logql_stops_at_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let (store, t) = store(dir.path());
    let p = RangeParams {
        start_ns: BASE,
        end_ns: BASE + 59 * SEC,
        step_ns: 10 * SEC,
        limit: 100,
        direction: Direction::Backward,
    };
    let lines = parse(r#"{service_name="api"} |= "request""#).unwrap();
    let metric = parse(r#"sum(count_over_time({service_name="api"}[1m]))"#).unwrap();

    let QueryValue::Streams(s) = query_range(&store, &t, &lines, p, &later()).unwrap().value else {
        panic!("streams");
    };
    assert_eq!(s.iter().map(|s| s.entries.len()).sum::<usize>(), 20);
    let QueryValue::Vector(v) = query_instant(&store, &t, &metric, BASE + 30 * SEC, &later())
        .unwrap()
        .value
    else {
        panic!("vector");
    };
    assert_eq!(v[0].points[0].1, 20.0);

    for d in [passed(), cancelled()] {
        assert!(is_timeout(query_range(&store, &t, &lines, p, &d)));
        assert!(is_timeout(query_range(&store, &t, &metric, p, &d)));
        assert!(is_timeout(query_instant(&store, &t, &metric, BASE, &d)));
        let sel = [Matcher::eq("service_name", "api")];
        assert!(is_timeout(select_lines(&store, &t, &sel, range(), &d)));
    }
    let (sel, _) = select_lines(
        &store,
        &t,
        &[Matcher::eq("service_name", "api")],
        range(),
        &later(),
    )
    .unwrap();
    assert_eq!(sel.len(), 20);
}

#[test]
fn log_search_and_histograms_stop_at_their_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let (store, t) = store(dir.path());
    let filter = |deadline: Deadline| LogFilter {
        deadline,
        ..LogFilter::new(range())
    };
    let search = |d: Deadline| {
        sightline_query::logs::search(
            &store,
            &t,
            &SearchRequest {
                filter: filter(d),
                limit: 5,
                direction: Direction::Backward,
            },
        )
    };
    let histogram = |d: Deadline| {
        sightline_query::logs::histogram(
            &store,
            &t,
            &HistogramRequest {
                filter: filter(d),
                step_ns: 10 * SEC,
                group: Default::default(),
            },
        )
    };
    let r = search(later()).unwrap();
    assert_eq!((r.matched, r.lines.len()), (20, 5));
    let h = histogram(later()).unwrap();
    assert_eq!(h.series[0].counts, vec![10, 10, 0, 0, 0, 0]);
    for d in [passed(), cancelled()] {
        assert!(is_timeout(search(d.clone())));
        assert!(is_timeout(histogram(d)));
    }
}

#[test]
fn trace_queries_stop_at_their_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let (store, t) = store(dir.path());
    let spans = |deadline: Deadline| SpanQuery {
        deadline,
        ..SpanQuery::new(range())
    };
    let red = |deadline: Deadline, step: i64| RedQuery {
        time: range(),
        step_nanos: step,
        group_by: RedGroup::Service,
        conds: Vec::new(),
        deadline,
    };
    assert_eq!(
        search_spans(&store, &t, &spans(later()))
            .unwrap()
            .total_matched,
        20
    );
    assert_eq!(
        search_traces(&store, &t, &spans(later()))
            .unwrap()
            .total_traces,
        20
    );
    // Whole-minute steps fold rollups; 10 s steps read the rows.
    for step in [60 * SEC, 10 * SEC] {
        let r = sightline_query::traces::red(&store, &t, &red(later(), step)).unwrap();
        assert_eq!(r.series[0].total.count, 20);
    }
    let names = tag_names(&store, &t, range(), &later()).unwrap();
    assert!(names.span.iter().any(|k| k == "tier"));
    let (values, _) = tag_values(&store, &t, range(), Scope::Span, "tier", &[], &later()).unwrap();
    assert_eq!(values.len(), 1);
    for d in [passed(), cancelled()] {
        assert!(is_timeout(search_spans(&store, &t, &spans(d.clone()))));
        assert!(is_timeout(search_traces(&store, &t, &spans(d.clone()))));
        for step in [60 * SEC, 10 * SEC] {
            let r = sightline_query::traces::red(&store, &t, &red(d.clone(), step));
            assert!(is_timeout(r));
        }
        assert!(is_timeout(tag_names(&store, &t, range(), &d)));
        assert!(is_timeout(tag_values(
            &store,
            &t,
            range(),
            Scope::Span,
            "tier",
            &[],
            &d
        )));
    }
}

#[test]
fn plans_stop_at_their_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let (store, t) = store(dir.path());
    for signal in [Signal::Spans, Signal::Logs] {
        let mut plan = Plan::new(t.clone(), signal, range());
        plan.group_by = vec![GroupBy::Key("service.name".into())];
        plan.aggregates = vec![Aggregate {
            func: AggFunc::Count,
            field: None,
        }];
        plan.deadline = later();
        let table = execute(&store, &plan).unwrap();
        assert_eq!(table.rows.len(), 1);
        assert_eq!(table.rows[0][0], Cell::Str("api".into()));
        assert_eq!(table.rows[0][1].as_f64(), Some(20.0));
        for d in [passed(), cancelled()] {
            plan.deadline = d;
            assert!(is_timeout(execute(&store, &plan)));
        }
    }
}
