//! Log search against a real store (part flushed to segments, part in memtables): a property
//! test comparing search and histograms with a brute-force filter over all lines, and pruning
//! assertions on `explain`. The fixtures here serve the LogQL tests too (`logql.rs`).

use proptest::prelude::*;
use sightline_query::logs::{
    Direction, HistogramGroup, HistogramRequest, LogCursor, LogFilter, SearchRequest, histogram,
    level_of, search, search_after,
};
use sightline_storage::{
    AttrValue, LogRecord, MatchOp, Matcher, SpanId, Store, StoreConfig, TenantId, TimeRange,
    TraceId, UnixNanos,
};

pub(crate) const WORDS: &[&str] = &[
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
pub(crate) const BASE: i64 = 1_795_910_400_000_000_000;
pub(crate) const HOUR: i64 = 3_600_000_000_000;

fn trace(i: u8) -> TraceId {
    TraceId([i + 1; 16])
}

fn span(i: u8) -> SpanId {
    SpanId([i + 1; 8])
}

#[derive(Clone, Debug)]
pub(crate) struct Line {
    offset: i64,
    words: Vec<usize>,
    sev: usize,
    service: usize,
    user: Option<usize>,
    region: Option<bool>,
    trace: Option<u8>,
    span: Option<u8>,
}

pub(crate) fn line() -> impl Strategy<Value = Line> {
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

pub(crate) fn record(l: &Line, i: usize) -> LogRecord {
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

pub(crate) fn open_store(dir: &std::path::Path) -> Store {
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
pub(crate) fn load(store: &Store, t: &TenantId, recs: &[LogRecord], split: (usize, usize)) {
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

pub(crate) fn rec(t: i64, body: &str, service: &str, sev: (i32, &str)) -> LogRecord {
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
