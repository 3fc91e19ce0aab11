//! LogQL against a real store (part flushed to segments, part in memtables): pipelines, log
//! volume and rates, line filters against a brute-force substring filter, and grouped sums
//! against the same sums built from every label of each line.

use proptest::prelude::*;
use sightline_query::logs::Direction;
use sightline_query::logs::logql::eval::{QueryValue, RangeParams, query_instant, query_range};
use sightline_query::logs::logql::parse;
use sightline_storage::{AttrValue, Deadline, LogRecord, SpanId, TenantId, TraceId};

use crate::log_search::{BASE, HOUR, WORDS, line, load, open_store, rec, record};

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
