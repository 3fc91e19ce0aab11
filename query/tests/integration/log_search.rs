//! Log search against a real store (part flushed to segments, part in memtables): a property
//! test comparing search and histograms with a brute-force filter over all lines, pruning
//! assertions on `explain`, and LogQL evaluation.

use proptest::prelude::*;
use sightline_query::logs::logql::eval::{QueryValue, RangeParams, query_instant, query_range};
use sightline_query::logs::logql::parse;
use sightline_query::logs::{
    Direction, HistogramGroup, HistogramRequest, LogCursor, LogFilter, SearchRequest, histogram,
    level_of, search, search_after,
};
use sightline_storage::{
    AttrValue, Deadline, LogRecord, MatchOp, Matcher, SpanId, Store, StoreConfig, TenantId,
    TimeRange, TraceId, UnixNanos,
};

const WORDS: &[&str] = &[
    "alpha", "beta", "gamma", "delta", "error", "timeout", "model", "tool",
];
const SERVICES: &[&str] = &["api", "worker", "rag"];
const USERS: &[&str] = &["u1", "u2", "u3"];
const SEVERITIES: &[(i32, &str)] = &[
    (0, ""),
    (5, "DEBUG"),
    (9, "INFO"),
    (13, "WARN"),
    (17, "ERROR"),
    (21, ""),
];
/// 2026-11-29T00:00:00Z.
const BASE: i64 = 1_795_910_400_000_000_000;
const HOUR: i64 = 3_600_000_000_000;

fn trace(i: u8) -> TraceId {
    TraceId([i + 1; 16])
}

fn span(i: u8) -> SpanId {
    SpanId([i + 1; 8])
}

#[derive(Clone, Debug)]
struct Line {
    offset: i64,
    words: Vec<usize>,
    sev: usize,
    service: usize,
    user: Option<usize>,
    region: Option<bool>,
    trace: Option<u8>,
    span: Option<u8>,
}

fn line() -> impl Strategy<Value = Line> {
    (
        0..2 * HOUR,
        prop::collection::vec(0..WORDS.len(), 1..5),
        0..SEVERITIES.len(),
        0..SERVICES.len(),
        prop::option::of(0..USERS.len()),
        prop::option::of(any::<bool>()),
        prop::option::of(0u8..3),
        prop::option::of(0u8..3),
    )
        .prop_map(
            |(offset, words, sev, service, user, region, trace, span)| Line {
                offset,
                words,
                sev,
                service,
                user,
                region,
                trace,
                span,
            },
        )
}

fn record(l: &Line, i: usize) -> LogRecord {
    // Distinct times: the offset plus the index in the low digits.
    let t = BASE + (l.offset / 1000) * 1000 + i as i64;
    let mut attributes = Vec::new();
    if let Some(u) = l.user {
        attributes.push(("user".to_owned(), AttrValue::Str(USERS[u].into())));
    }
    let mut resource_attributes = Vec::new();
    if let Some(r) = l.region {
        resource_attributes.push((
            "region".to_owned(),
            AttrValue::Str(if r { "eu" } else { "us" }.into()),
        ));
    }
    LogRecord {
        time: UnixNanos(t),
        observed_time: UnixNanos(t),
        severity_number: SEVERITIES[l.sev].0,
        severity_text: SEVERITIES[l.sev].1.into(),
        body: AttrValue::Str(
            l.words
                .iter()
                .map(|w| WORDS[*w])
                .collect::<Vec<_>>()
                .join(" "),
        ),
        trace_id: l.trace.map(trace),
        span_id: l.span.map(span),
        flags: 0,
        service_name: SERVICES[l.service].into(),
        scope_name: String::new(),
        event_name: String::new(),
        resource_attributes,
        attributes,
    }
}

fn open_store(dir: &std::path::Path) -> Store {
    Store::open(
        dir,
        StoreConfig {
            background: false,
            fsync: sightline_storage::FsyncPolicy::Never,
            ..StoreConfig::default()
        },
    )
    .unwrap()
}

/// Appends `recs` in three parts: two flushed (two segments per partition touched), one left in
/// the memtable.
fn load(store: &Store, t: &TenantId, recs: &[LogRecord], split: (usize, usize)) {
    let (a, b) = (split.0.min(recs.len()), split.1.min(recs.len()));
    let (a, b) = (a.min(b), a.max(b));
    for (part, flush) in [(&recs[..a], true), (&recs[a..b], true), (&recs[b..], false)] {
        if !part.is_empty() {
            store.append_logs(t, part).unwrap();
        }
        if flush {
            store.flush().unwrap();
        }
    }
}

#[derive(Clone, Debug)]
struct Query {
    text: Option<(usize, Option<usize>, bool)>,
    matchers: Vec<(usize, usize, usize)>,
    min_sev: Option<i32>,
    sev_text: bool,
    trace: bool,
    span: bool,
    range: (i64, i64),
    limit: usize,
    forward: bool,
}

fn query() -> impl Strategy<Value = Query> {
    (
        prop::option::of((
            0..WORDS.len(),
            prop::option::of(0..WORDS.len()),
            any::<bool>(),
        )),
        prop::collection::vec((0usize..3, 0usize..4, 0usize..3), 0..3),
        prop::option::of(prop::sample::select(vec![5, 9, 13, 17])),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.2),
        (0..2 * HOUR, 0..2 * HOUR),
        1usize..40,
        prop::bool::weighted(0.3),
    )
        .prop_map(
            |(text, matchers, min_sev, sev_text, trace, span, range, limit, forward)| Query {
                text,
                matchers,
                min_sev,
                sev_text,
                trace,
                span,
                range: (range.0.min(range.1), range.0.max(range.1) + 1),
                limit,
                forward,
            },
        )
}

fn build_filter(q: &Query) -> (LogFilter, Vec<Matcher>) {
    let mut f = LogFilter::new(TimeRange {
        start: UnixNanos(BASE + q.range.0),
        end: UnixNanos(BASE + q.range.1),
    });
    f.full_text = q.text.map(|(a, b, neg)| match b {
        None => WORDS[a].to_owned(),
        Some(b) if neg => format!("{} -{}", WORDS[a], WORDS[b]),
        Some(b) => format!("{} AND {}", WORDS[a], WORDS[b]),
    });
    let mut ms = Vec::new();
    for &(key, op, val) in &q.matchers {
        let (k, vals): (&str, &[&str]) = match key {
            0 => ("service.name", SERVICES),
            1 => ("user", USERS),
            _ => ("region", &["eu", "us", "eu"]),
        };
        let m = match op {
            0 => Matcher::new(k, MatchOp::Eq, vals[val]),
            1 => Matcher::new(k, MatchOp::NotEq, vals[val]),
            2 => Matcher::new(
                k,
                MatchOp::Regex,
                format!("{}|{}", vals[val], vals[(val + 1) % vals.len()]),
            ),
            _ => Matcher::new(k, MatchOp::NotRegex, vals[val]),
        }
        .unwrap();
        ms.push(m);
    }
    f.matchers = ms.clone();
    f.min_severity = q.min_sev;
    f.severity_text = q.sev_text.then(|| "ERROR".to_owned());
    f.trace_id = q.trace.then(|| trace(0));
    f.span_id = q.span.then(|| span(0));
    (f, ms)
}

/// The brute-force answer: every line checked against every condition.
fn brute(recs: &[LogRecord], f: &LogFilter) -> Vec<LogRecord> {
    recs.iter()
        .filter(|r| f.time.contains(r.time))
        .filter(|r| {
            let body = r.body.render();
            let words: Vec<&str> = body.split(' ').collect();
            match f.full_text.as_deref() {
                None => true,
                Some(t) if t.contains(" AND ") => t.split(" AND ").all(|w| words.contains(&w)),
                Some(t) if t.contains(" -") => {
                    let (a, b) = t.split_once(" -").unwrap();
                    words.contains(&a) && !words.contains(&b)
                }
                Some(t) => words.contains(&t),
            }
        })
        .filter(|r| {
            f.matchers.iter().all(|m| {
                let v = match m.key.as_str() {
                    "service.name" => Some(r.service_name.clone()),
                    k => r
                        .attributes
                        .iter()
                        .chain(r.resource_attributes.iter())
                        .find(|(key, _)| key == k)
                        .map(|(_, v)| v.render()),
                };
                m.matches(v.as_deref().unwrap_or(""))
            })
        })
        .filter(|r| f.min_severity.is_none_or(|m| r.severity_number >= m))
        .filter(|r| {
            f.severity_text
                .as_ref()
                .is_none_or(|s| &r.severity_text == s)
        })
        .filter(|r| f.trace_id.is_none_or(|t| r.trace_id == Some(t)))
        .filter(|r| f.span_id.is_none_or(|s| r.span_id == Some(s)))
        .cloned()
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn search_equals_brute_force(
        lines in prop::collection::vec(line(), 1..80),
        split in (0usize..80, 0usize..80),
        queries in prop::collection::vec(query(), 1..8),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(dir.path());
        let t = TenantId::new("prop").unwrap();
        let recs: Vec<LogRecord> = lines.iter().enumerate().map(|(i, l)| record(l, i)).collect();
        load(&store, &t, &recs, split);
        for q in &queries {
            let (filter, _) = build_filter(q);
            let mut want = brute(&recs, &filter);
            want.sort_by_key(|r| std::cmp::Reverse(r.time));
            if q.forward {
                want.reverse();
            }
            let matched = want.len();
            want.truncate(q.limit);
            let got = search(&store, &t, &SearchRequest {
                filter: filter.clone(),
                limit: q.limit,
                direction: if q.forward { Direction::Forward } else { Direction::Backward },
            }).unwrap();
            prop_assert_eq!(got.matched, matched, "{:?}", q);
            let g: Vec<(i64, String)> = got.lines.iter().map(|r| (r.time.0, r.body.render())).collect();
            let w: Vec<(i64, String)> = want.iter().map(|r| (r.time.0, r.body.render())).collect();
            prop_assert_eq!(g, w, "{:?}", q);
            prop_assert!(got.explain.rows_returned as usize >= matched);

            // Histogram by severity over the same filter: per-level counts agree.
            let step = (q.range.1 - q.range.0).max(1) / 7 + 1;
            let h = histogram(&store, &t, &HistogramRequest {
                filter: filter.clone(),
                step_ns: step,
                group: HistogramGroup::Severity,
            }).unwrap();
            let all = brute(&recs, &filter);
            for s in &h.series {
                let level = s.group.clone().unwrap();
                for (i, c) in s.counts.iter().enumerate() {
                    let lo = h.buckets[i];
                    let want = all.iter().filter(|r| {
                        r.time.0 >= lo && r.time.0 < lo + step
                            && level_of(r.severity_number, &r.severity_text).unwrap_or_else(|| "unknown".into()) == level
                    }).count() as u64;
                    prop_assert_eq!(*c, want, "{} bucket {}", level, i);
                }
            }
            let total: u64 = h.series.iter().flat_map(|s| s.counts.iter()).sum();
            prop_assert_eq!(total as usize, all.len());
        }
    }
}

fn rec(t: i64, body: &str, service: &str, sev: (i32, &str)) -> LogRecord {
    let mut r = record(
        &Line {
            offset: 0,
            words: vec![0],
            sev: 0,
            service: 0,
            user: None,
            region: None,
            trace: None,
            span: None,
        },
        0,
    );
    r.time = UnixNanos(t);
    r.observed_time = UnixNanos(t);
    r.body = AttrValue::Str(body.into());
    r.service_name = service.into();
    r.severity_number = sev.0;
    r.severity_text = sev.1.into();
    r
}

#[test]
fn pages_by_cursor_neither_repeat_nor_skip_lines_sharing_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path());
    let t = TenantId::new("pages").unwrap();
    // 40 lines: runs of 7 share one timestamp, so page boundaries fall inside runs.
    let recs: Vec<LogRecord> = (0..40)
        .map(|i| {
            rec(
                BASE + (i / 7) * 1_000,
                &format!("line {i}"),
                "api",
                (9, "INFO"),
            )
        })
        .collect();
    store.append_logs(&t, &recs[..25]).unwrap();
    store.flush().unwrap();
    store.append_logs(&t, &recs[25..]).unwrap();
    let all = LogFilter::new(TimeRange {
        start: UnixNanos(BASE),
        end: UnixNanos(BASE + HOUR),
    });
    for direction in [Direction::Backward, Direction::Forward] {
        let req = |limit| SearchRequest {
            filter: all.clone(),
            limit,
            direction,
        };
        let whole = search(&store, &t, &req(100)).unwrap();
        assert_eq!(whole.lines.len(), 40);
        let mut got = Vec::new();
        let mut after: Option<LogCursor> = None;
        for page in 0.. {
            if page == 2 {
                // The storage layout changes between two pages.
                store.flush().unwrap();
            }
            let (r, next) = search_after(&store, &t, &req(3), after.as_ref()).unwrap();
            assert_eq!(r.matched, 40 - got.len(), "{direction:?} page {page}");
            got.extend(r.lines);
            match next {
                Some(c) => {
                    // The cursor survives its text form.
                    after = Some(LogCursor::parse(&c.to_string()).unwrap());
                }
                None => break,
            }
        }
        assert_eq!(got, whole.lines, "{direction:?}");
        let times: Vec<i64> = got.iter().map(|l| l.time.0).collect();
        let mut sorted = times.clone();
        sorted.sort_unstable();
        if direction == Direction::Backward {
            sorted.reverse();
        }
        assert_eq!(times, sorted);
    }
    // A cursor of the other direction is refused.
    let c = LogCursor {
        direction: Direction::Forward,
        time: BASE,
        skip: 1,
    };
    let req = SearchRequest {
        filter: all,
        limit: 3,
        direction: Direction::Backward,
    };
    assert!(search_after(&store, &t, &req, Some(&c)).is_err());
}

#[test]
fn explain_shows_pruning() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path());
    let t = TenantId::new("prune").unwrap();
    // Hour 0: "alpha" lines of api; hour 1: "beta" lines of worker; each flushed separately.
    let h0: Vec<LogRecord> = (0..50)
        .map(|i| {
            rec(
                BASE + i * 1_000_000,
                "alpha request served",
                "api",
                (9, "INFO"),
            )
        })
        .collect();
    let h1: Vec<LogRecord> = (0..50)
        .map(|i| {
            rec(
                BASE + HOUR + i * 1_000_000,
                "beta job done",
                "worker",
                (17, "ERROR"),
            )
        })
        .collect();
    store.append_logs(&t, &h0).unwrap();
    store.flush().unwrap();
    store.append_logs(&t, &h1).unwrap();
    store.flush().unwrap();
    let all = TimeRange {
        start: UnixNanos(BASE),
        end: UnixNanos(BASE + 2 * HOUR),
    };

    // Time: only hour 1 is read.
    let mut f = LogFilter::new(TimeRange {
        start: UnixNanos(BASE + HOUR),
        end: UnixNanos(BASE + 2 * HOUR),
    });
    let r = search(
        &store,
        &t,
        &SearchRequest {
            filter: f.clone(),
            limit: 10,
            direction: Direction::Backward,
        },
    )
    .unwrap();
    assert_eq!(r.matched, 50);
    assert_eq!(r.explain.segments_total, 2);
    assert_eq!(r.explain.segments_pruned_by_time, 1);
    assert_eq!(r.explain.segments_read, 1);

    // Full text: the alpha segment only.
    f.time = all;
    f.full_text = Some("alpha".into());
    let r = search(
        &store,
        &t,
        &SearchRequest {
            filter: f.clone(),
            limit: 100,
            direction: Direction::Backward,
        },
    )
    .unwrap();
    assert_eq!(r.matched, 50);
    assert!(r.lines.iter().all(|l| l.service_name == "api"));
    assert_eq!(r.explain.segments_pruned_by_index, 1);
    assert_eq!(r.explain.segments_read, 1);

    // Attribute filter via postings: service.name=worker reads only the worker segment.
    f.full_text = None;
    f.matchers = vec![Matcher::eq("service.name", "worker")];
    let r = search(
        &store,
        &t,
        &SearchRequest {
            filter: f.clone(),
            limit: 5,
            direction: Direction::Backward,
        },
    )
    .unwrap();
    assert_eq!(r.matched, 50);
    assert_eq!(r.lines.len(), 5);
    assert_eq!(r.explain.segments_pruned_by_index, 1);
    // Newest first.
    assert!(r.lines.windows(2).all(|w| w[0].time > w[1].time));
    assert_eq!(r.lines[0].time.0, BASE + HOUR + 49 * 1_000_000);

    // Severity text is pushed down too.
    f.matchers.clear();
    f.severity_text = Some("ERROR".into());
    let r = search(
        &store,
        &t,
        &SearchRequest {
            filter: f,
            limit: 5,
            direction: Direction::Backward,
        },
    )
    .unwrap();
    assert_eq!(r.matched, 50);
    assert_eq!(r.explain.segments_pruned_by_index, 1);
}

#[test]
fn logql_over_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path());
    let t = TenantId::new("lq").unwrap();
    let mut recs = Vec::new();
    for i in 0..120i64 {
        let (svc, sev) = if i % 3 == 0 {
            ("api", (17, "ERROR"))
        } else {
            ("worker", (9, "INFO"))
        };
        let body = format!(
            r#"{{"status": {}, "msg": "req {i}", "nested": {{"k": "v{}"}}}}"#,
            200 + (i % 4) * 100,
            i % 2
        );
        recs.push(rec(BASE + i * 1_000_000_000, &body, svc, sev));
    }
    store.append_logs(&t, &recs[..60]).unwrap();
    store.flush().unwrap();
    store.append_logs(&t, &recs[60..]).unwrap();
    let p = RangeParams {
        start_ns: BASE,
        end_ns: BASE + 119 * 1_000_000_000,
        step_ns: 60_000_000_000,
        limit: 1000,
        direction: Direction::Backward,
    };

    // Log query with json + label filter, streams grouped by labels.
    let e =
        parse(r#"{service_name="api"} |= "req" | json | status >= 300 | nested_k="v1""#).unwrap();
    let out = query_range(&store, &t, &e, p, &Deadline::none()).unwrap();
    let QueryValue::Streams(streams) = out.value else {
        panic!()
    };
    let want: Vec<i64> = (0..120)
        .filter(|i| i % 3 == 0 && 200 + (i % 4) * 100 >= 300 && i % 2 == 1)
        .collect();
    let got: usize = streams.iter().map(|s| s.entries.len()).sum();
    assert_eq!(got, want.len());
    for s in &streams {
        assert_eq!(
            s.labels.get("service_name").map(String::as_str),
            Some("api")
        );
        assert_eq!(s.labels.get("level").map(String::as_str), Some("error"));
        assert!(s.labels.contains_key("status"));
        assert!(s.entries.windows(2).all(|w| w[0].0 > w[1].0));
    }

    // Limit keeps the newest lines across streams.
    let e = parse(r#"{service_name=~"api|worker"}"#).unwrap();
    let out = query_range(
        &store,
        &t,
        &e,
        RangeParams { limit: 7, ..p },
        &Deadline::none(),
    )
    .unwrap();
    let QueryValue::Streams(streams) = out.value else {
        panic!()
    };
    let mut times: Vec<i64> = streams
        .iter()
        .flat_map(|s| s.entries.iter().map(|e| e.0))
        .collect();
    times.sort_unstable();
    assert_eq!(
        times,
        (113..120)
            .map(|i| BASE + i * 1_000_000_000)
            .collect::<Vec<_>>()
    );

    // Log volume: sum by (level) (count_over_time(...[1m])).
    let e = parse(r#"sum by (level) (count_over_time({service_name=~".+"}[1m]))"#).unwrap();
    let out = query_range(&store, &t, &e, p, &Deadline::none()).unwrap();
    let QueryValue::Matrix(m) = out.value else {
        panic!()
    };
    assert_eq!(m.len(), 2);
    for s in &m {
        let level = s.labels.get("level").unwrap();
        for &(ts, v) in &s.points {
            let want = (0..120i64)
                .filter(|i| {
                    let at = BASE + i * 1_000_000_000;
                    at > ts - 60_000_000_000 && at <= ts && ((i % 3 == 0) == (level == "error"))
                })
                .count() as f64;
            assert_eq!(v, want, "{level} at {ts}");
        }
    }

    // Rate and topk.
    let e = parse(r#"topk(1, sum by (service_name) (rate({service_name=~".+"}[1m])))"#).unwrap();
    let out = query_instant(
        &store,
        &t,
        &e,
        BASE + 119 * 1_000_000_000,
        &Deadline::none(),
    )
    .unwrap();
    let QueryValue::Vector(v) = out.value else {
        panic!()
    };
    assert_eq!(v.len(), 1);
    assert_eq!(
        v[0].labels.get("service_name").map(String::as_str),
        Some("worker")
    );
    assert_eq!(v[0].points[0].1, 40.0 / 60.0);

    // Health check.
    let out = query_instant(
        &store,
        &t,
        &parse("vector(1)+vector(1)").unwrap(),
        BASE,
        &Deadline::none(),
    )
    .unwrap();
    let QueryValue::Vector(v) = out.value else {
        panic!()
    };
    assert_eq!(v.len(), 1);
    assert!(v[0].labels.is_empty());
    assert_eq!(v[0].points[0].1, 2.0);

    // Instant log queries are refused.
    assert!(
        query_instant(
            &store,
            &t,
            &parse(r#"{a="b"}"#).unwrap(),
            BASE,
            &Deadline::none()
        )
        .is_err()
    );
}

/// A LogQL `|=` literal: a piece of the words (cut anywhere, so it may start or end inside a
/// token), sometimes spanning two words, sometimes capitalised (filters are case-sensitive).
fn literal() -> impl Strategy<Value = String> {
    (
        0..WORDS.len(),
        0..WORDS.len(),
        0usize..4,
        1usize..12,
        any::<bool>(),
    )
        .prop_map(|(a, b, from, len, upper)| {
            let joined = format!("{} {}", WORDS[a], WORDS[b]);
            let from = from.min(joined.len() - 1);
            let lit = &joined[from..(from + len).min(joined.len())];
            if upper {
                lit.to_uppercase()
            } else {
                lit.to_owned()
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Line filters go to the store, which narrows them with its token indexes: the lines a
    /// LogQL query returns (and counts) are exactly those whose bodies contain every `|=`
    /// literal and no `!=` one, in segments and memtables alike.
    #[test]
    fn line_filters_equal_a_brute_force_substring_filter(
        lines in prop::collection::vec(line(), 1..120),
        split in (0usize..120, 0usize..120),
        keep in prop::collection::vec(literal(), 1..3),
        drop in prop::option::of(literal()),
        limit in 1usize..12,
        backward in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(dir.path());
        let t = TenantId::new("lf").unwrap();
        let mut recs: Vec<LogRecord> = lines.iter().enumerate().map(|(i, l)| record(l, i)).collect();
        // One line holds a token too long to index, with words inside it.
        if let Some(r) = recs.first_mut() {
            r.body = AttrValue::Str(format!("{} id={}timeout{}", WORDS[0], "ab".repeat(25), "cd".repeat(25)));
        }
        load(&store, &t, &recs, split);
        let mut q = r#"{service_name=~".+"}"#.to_owned();
        for k in &keep {
            q.push_str(&format!(" |= {k:?}"));
        }
        if let Some(d) = &drop {
            q.push_str(&format!(" != {d:?}"));
        }
        let want: Vec<i64> = {
            let mut v: Vec<i64> = recs
                .iter()
                .filter(|r| {
                    let AttrValue::Str(b) = &r.body else { return false };
                    keep.iter().all(|k| b.contains(k.as_str()))
                        && drop.as_ref().is_none_or(|d| !b.contains(d.as_str()))
                })
                .map(|r| r.time.0)
                .collect();
            v.sort_unstable();
            v
        };
        let p = RangeParams {
            start_ns: BASE,
            end_ns: BASE + 2 * HOUR,
            step_ns: HOUR,
            limit: 5_000,
            direction: Direction::Backward,
        };
        let out = query_range(&store, &t, &parse(&q).unwrap(), p, &Deadline::none()).unwrap();
        let QueryValue::Streams(streams) = out.value else { panic!("streams") };
        let mut got: Vec<i64> = streams.iter().flat_map(|s| s.entries.iter().map(|e| e.0)).collect();
        got.sort_unstable();
        prop_assert_eq!(&got, &want, "{}", q);
        // With a small limit: the newest (or oldest) `limit` of them, whole lines read a slice
        // of times at a time while `!=` drops some.
        let direction = if backward { Direction::Backward } else { Direction::Forward };
        let out = query_range(&store, &t, &parse(&q).unwrap(), RangeParams { limit, direction, ..p }, &Deadline::none()).unwrap();
        let QueryValue::Streams(streams) = out.value else { panic!("streams") };
        let mut got: Vec<i64> = streams.iter().flat_map(|s| s.entries.iter().map(|e| e.0)).collect();
        got.sort_unstable();
        let mut newest = want.clone();
        if backward {
            newest.reverse();
        }
        newest.truncate(limit);
        newest.sort_unstable();
        prop_assert_eq!(&got, &newest, "{} limit {} backward {}", q, limit, backward);
        // The same filter under a count.
        let count = format!("sum(count_over_time({q} [3h]))");
        let out = query_instant(&store, &t, &parse(&count).unwrap(), BASE + 2 * HOUR, &Deadline::none()).unwrap();
        let QueryValue::Vector(v) = out.value else { panic!("vector") };
        let counted = v.first().and_then(|s| s.points.first()).map_or(0.0, |p| p.1);
        prop_assert_eq!(counted, want.len() as f64, "{}", count);
    }
}

#[test]
fn a_line_filter_reads_only_the_lines_its_words_may_be_in() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path());
    let t = TenantId::new("lf").unwrap();
    let recs: Vec<LogRecord> = (0..2_000i64)
        .map(|i| {
            let body = if i == 1_500 {
                "upstream Timeout after 30s".to_owned()
            } else {
                format!("request {i} answered in {} ms", i % 97)
            };
            rec(BASE + i * 1_000_000, &body, "api", (9, "INFO"))
        })
        .collect();
    store.append_logs(&t, &recs[..1_000]).unwrap();
    store.flush().unwrap();
    store.append_logs(&t, &recs[1_000..]).unwrap();
    let p = RangeParams {
        start_ns: BASE,
        end_ns: BASE + HOUR,
        step_ns: HOUR,
        limit: 100,
        direction: Direction::Backward,
    };
    let e = parse(r#"{service_name="api"} |= "Timeout af""#).unwrap();
    let out = query_range(&store, &t, &e, p, &Deadline::none()).unwrap();
    let QueryValue::Streams(streams) = out.value else {
        panic!("streams")
    };
    let lines: Vec<&str> = streams
        .iter()
        .flat_map(|s| s.entries.iter().map(|e| e.1.as_str()))
        .collect();
    assert_eq!(lines, ["upstream Timeout after 30s"]);
    assert_eq!(
        out.stats.lines_processed, 1,
        "only the matching line is read"
    );
    // No line holds the word: the segment is skipped without reading a row.
    let e = parse(r#"{service_name="api"} |= "zebra""#).unwrap();
    let out = query_range(&store, &t, &e, p, &Deadline::none()).unwrap();
    assert_eq!(out.stats.lines_processed, 0);
    assert_eq!(out.stats.explain.rows_returned, 0);
}

/// Grafana's log volume query over lines that each carry their own trace and span ids (every
/// line a label set of its own): the sum by level groups lines as they are read, so it answers
/// past the series limit, with the counts of a brute-force tally.
#[test]
fn log_volume_answers_over_more_label_sets_than_the_series_limit() {
    use sightline_query::logs::logql::eval::MAX_SERIES;
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path());
    let t = TenantId::new("vol").unwrap();
    let n = MAX_SERIES as i64 + 500;
    let recs: Vec<LogRecord> = (0..n)
        .map(|i| {
            let sev = if i % 7 == 0 {
                (17, "ERROR")
            } else {
                (9, "INFO")
            };
            let mut r = rec(BASE + i * 100_000, "handled request", "api", sev);
            r.trace_id = Some(TraceId((i as u128 + 1).to_be_bytes()));
            r.span_id = Some(SpanId((i as u64 + 1).to_be_bytes()));
            r
        })
        .collect();
    store.append_logs(&t, &recs[..n as usize / 2]).unwrap();
    store.flush().unwrap();
    store.append_logs(&t, &recs[n as usize / 2..]).unwrap();
    let end = BASE + n * 100_000;
    let q = r#"sum by (level) (count_over_time({service_name="api"} | drop __error__ [1h]))"#;
    let out = query_instant(&store, &t, &parse(q).unwrap(), end, &Deadline::none()).unwrap();
    let QueryValue::Vector(v) = out.value else {
        panic!("vector")
    };
    let mut got: Vec<(String, f64)> = v
        .iter()
        .map(|s| {
            let level = s.labels.get("level").cloned().unwrap_or_default();
            (level, s.points[0].1)
        })
        .collect();
    got.sort_by(|a, b| a.0.cmp(&b.0));
    let errors = (0..n).filter(|i| i % 7 == 0).count() as f64;
    assert_eq!(
        got,
        [
            ("error".to_owned(), errors),
            ("info".to_owned(), n as f64 - errors)
        ]
    );
    // Without a sum first, every line is a series: refused with a hint.
    let q = r#"count_over_time({service_name="api"} [1h])"#;
    let err = query_instant(&store, &t, &parse(q).unwrap(), end, &Deadline::none()).unwrap_err();
    assert!(err.to_string().contains("sum by"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 120, ..ProptestConfig::default() })]

    /// A sum by labels looks up only the grouping's labels of each line; a label filter that
    /// every line passes makes it build every label instead: both answer the same.
    #[test]
    fn grouped_sums_equal_those_built_from_every_label(
        lines in prop::collection::vec(line(), 1..80),
        split in (0usize..80, 0usize..80),
        by in prop::sample::subsequence(&["level", "service_name", "region", "user", "trace_id", "span_id", "nope"][..], 0..4),
        drop_user in any::<bool>(),
        filter in any::<bool>(),
        bytes in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(dir.path());
        let t = TenantId::new("grp").unwrap();
        let recs: Vec<LogRecord> = lines.iter().enumerate().map(|(i, l)| record(l, i)).collect();
        load(&store, &t, &recs, split);
        let drop = if drop_user { " | drop user" } else { "" };
        let by = by.join(", ");
        let filter = if filter { r#" |= "a""# } else { "" };
        let func = if bytes { "bytes_over_time" } else { "count_over_time" };
        let direct = format!(r#"sum by ({by}) ({func}({{service_name=~"api|rag"}}{filter}{drop} [30m]))"#);
        let built = format!(r#"sum by ({by}) ({func}({{service_name=~"api|rag"}}{filter}{drop} | nolabel="" [30m]))"#);
        let p = RangeParams {
            start_ns: BASE,
            end_ns: BASE + 2 * HOUR,
            step_ns: HOUR / 4,
            limit: 100,
            direction: Direction::Backward,
        };
        let a = query_range(&store, &t, &parse(&direct).unwrap(), p, &Deadline::none()).unwrap();
        let b = query_range(&store, &t, &parse(&built).unwrap(), p, &Deadline::none()).unwrap();
        prop_assert_eq!(a.value, b.value, "{}", direct);
    }
}
