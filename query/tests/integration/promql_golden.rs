//! PromQL golden suite: the same fixed samples go into a real Prometheus (blocks built with
//! `promtool`) and into a real Sightline [`Store`]; every query of `golden/queries.rs` is
//! evaluated by both, as instant queries at several times and as range queries over several
//! grids, and the answers are compared in this run (labels exact, floats within 1e-9 relative).
//!
//! Without `prometheus`/`promtool` on the PATH the suite is skipped with a message, unless
//! `SIGHTLINE_REQUIRE_PROMETHEUS=1`, when it fails.

use std::time::Instant;

use crate::golden::compare::{Outcome, compare, from_ours};
use crate::golden::data;
use crate::golden::prom::{self, Prometheus};
use crate::golden::queries::{
    DUPLICATE_LABELSET_QUERIES, ERROR_QUERIES, INSTANT_TIMES, QUERIES, RANGES,
};
use sightline_query::promql::{Budget, MemorySource, StoreSource, instant_query, range_query};
use sightline_storage::{FsyncPolicy, Store, StoreConfig, TenantId};

/// Prometheus' message for a vector whose label sets are not unique.
const DUPLICATE: &str = "vector cannot contain metrics with the same labelset";

/// Whether the query's top level orders its answer (then series order is compared too).
fn ordered(q: &str) -> bool {
    q.starts_with("sort(") || q.starts_with("sort_desc(")
}

fn non_empty(o: &Outcome) -> bool {
    match o {
        Outcome::Vector(v) => !v.is_empty(),
        Outcome::Matrix(m) => !m.is_empty(),
        Outcome::Scalar(..) | Outcome::String(_) => true,
        Outcome::Error(_) => false,
    }
}

#[test]
fn promql_answers_match_prometheus() {
    if !prom::available() {
        let required = std::env::var("SIGHTLINE_REQUIRE_PROMETHEUS").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "SIGHTLINE_REQUIRE_PROMETHEUS=1 but prometheus/promtool are not runnable"
        );
        println!("skipped: prometheus and promtool are not installed (apt-get install prometheus)");
        return;
    }
    assert!(
        QUERIES.len() >= 150,
        "only {} golden queries",
        QUERIES.len()
    );
    let started = Instant::now();
    let data = data::generate();
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(
        dir.path().join("store"),
        StoreConfig {
            background: false,
            fsync: FsyncPolicy::Never,
            ..StoreConfig::default()
        },
    )
    .expect("open store");
    let tenant = TenantId::new("golden").expect("tenant");
    data::load(&store, &tenant, &data).expect("load store");
    let prom_dir = dir.path().join("prometheus");
    std::fs::create_dir_all(&prom_dir).expect("mkdir");
    let prometheus = Prometheus::start(&prom_dir, &data::openmetrics(&data));
    let setup = started.elapsed();
    let src = StoreSource::new(&store, tenant);

    let mut mismatches: Vec<String> = Vec::new();
    let mut failed_queries = 0usize;
    let mut evaluations = 0usize;
    let mut answered = 0usize;
    for q in QUERIES {
        let mut ok = true;
        let mut any = false;
        for &t in &INSTANT_TIMES {
            let theirs = prometheus.instant(q, t);
            if let Outcome::Error(e) = &theirs {
                panic!("golden query {q:?} fails in Prometheus at {t}: {e}");
            }
            any |= non_empty(&theirs);
            let ours = from_ours(instant_query(&src, q, t, &Budget::default()));
            evaluations += 1;
            if let Err(d) = compare(&ours, &theirs, ordered(q)) {
                ok = false;
                mismatches.push(format!("instant {q:?} @{t}: {d}"));
            }
        }
        for &(start, end, step) in &RANGES {
            let theirs = prometheus.range(q, start, end, step);
            any |= non_empty(&theirs);
            let ours = from_ours(range_query(&src, q, start, end, step, &Budget::default()));
            evaluations += 1;
            if let Err(d) = compare(&ours, &theirs, false) {
                ok = false;
                mismatches.push(format!("range {q:?} [{start}, {end}, {step}]: {d}"));
            }
        }
        answered += usize::from(any);
        failed_queries += usize::from(!ok);
    }
    let duplicates = DUPLICATE_LABELSET_QUERIES
        .iter()
        .map(|q| (q, Some(DUPLICATE)));
    for (q, needle) in ERROR_QUERIES.iter().map(|q| (q, None)).chain(duplicates) {
        let t = INSTANT_TIMES[0];
        let (start, end, step) = RANGES[0];
        let mut ok = true;
        for (what, theirs, ours) in [
            (
                "instant",
                prometheus.instant(q, t),
                instant_query(&src, q, t, &Budget::default()),
            ),
            (
                "range",
                prometheus.range(q, start, end, step),
                range_query(&src, q, start, end, step, &Budget::default()),
            ),
        ] {
            let Outcome::Error(their_error) = &theirs else {
                panic!("{q:?} should fail in Prometheus ({what}), got {theirs:?}");
            };
            if let Some(needle) = needle {
                assert!(
                    their_error.contains(needle),
                    "Prometheus refused {q:?} ({what}) for another reason: {their_error}"
                );
            }
            evaluations += 1;
            let ours = from_ours(ours);
            let refused_alike = match (&ours, needle) {
                (Outcome::Error(e), Some(needle)) => e.contains(needle),
                (Outcome::Error(_), None) => true,
                _ => false,
            };
            if !refused_alike {
                ok = false;
                mismatches.push(format!(
                    "{q:?} ({what}) should fail like Prometheus ({their_error}), ours: {ours:?}"
                ));
            }
        }
        failed_queries += usize::from(!ok);
    }
    println!(
        "golden: {} queries, {evaluations} evaluations, {} queries matched, {} differ; \
         setup {setup:?}, total {:?}",
        QUERIES.len() + ERROR_QUERIES.len() + DUPLICATE_LABELSET_QUERIES.len(),
        QUERIES.len() + ERROR_QUERIES.len() + DUPLICATE_LABELSET_QUERIES.len() - failed_queries,
        failed_queries,
        started.elapsed()
    );
    // Nearly every query must have something to compare somewhere (no vacuous entries).
    assert!(
        answered + 5 >= QUERIES.len(),
        "only {answered} of {} queries had a non-empty answer",
        QUERIES.len()
    );
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

#[test]
fn unsupported_constructs_are_refused_by_name() {
    let src = MemorySource::default();
    for (q, needle) in [
        ("rate(up[5m:1m])", "subquer"),
        ("max_over_time(up[10m:30s])", "subquer"),
        ("holt_winters(up[5m], 0.5, 0.5)", "holt_winters"),
    ] {
        let err = instant_query(&src, q, data::T0, &Budget::default())
            .expect_err("unsupported construct must fail")
            .to_string();
        assert!(
            err.contains(needle),
            "{q}: error {err:?} should name {needle}"
        );
    }
}
