//! The range query cache over a real store: after any sequence of appends (late, out of order,
//! replacing values), flushes, compactions and retention drops, every cached answer equals a
//! fresh evaluation of the same request.

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use sightline_query::promql::{
    Budget, CacheConfig, QueryResult, ResultCache, ResultSeries, StoreSource, range_query,
};
use sightline_storage::{
    FsyncPolicy, ManualClock, MetricBatch, MetricKind, RetentionConfig, Sample, SeriesDef, Store,
    StoreConfig, TenantId, UnixNanos,
};

const MIN: i64 = 60_000;
const HOUR: i64 = 60 * MIN;
/// Data spans four hours from here (aligned to the hour partitions).
const BASE: i64 = 1_795_960_800_000;
const SPAN: i64 = 4 * HOUR;

const QUERIES: &[&str] = &[
    "sum by (s) (rate(m[5m]))",
    "m",
    "max_over_time(m[10m])",
    "count(m)",
    "rate(m[5m] offset -10m)",
    "changes(m[15m]) + on(s) m offset 5m",
    "sum(increase(m[1h])) / count(m)",
];

const STEPS: &[i64] = &[15_000, 60_000, 97_000, 300_000];

#[derive(Clone, Debug)]
enum Op {
    /// Samples of series `s` at `BASE + t`, any order, maybe replacing earlier ones.
    Write(Vec<(u8, i64, f64)>),
    /// A range query: shape, start and length from `BASE`, step, how long before the end of
    /// the data "now" is.
    Query(usize, i64, i64, usize, i64),
    /// The last query again, its window moved by this many steps (a dashboard refreshing).
    Again(i64),
    Flush,
    Compact,
    /// The clock moves on an hour and retention drops what expired.
    Retention,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => proptest::collection::vec((0u8..4, 0i64..SPAN / 10_000, -1e3f64..1e3), 1..80)
            .prop_map(|v| Op::Write(v.into_iter().map(|(s, k, x)| (s, k * 10_000, x.round())).collect())),
        // Starts on a 30 s grid, so that requests share the phase of their steps.
        3 => (0..QUERIES.len(), 0i64..SPAN / 30_000, 0i64..SPAN, 0..STEPS.len(), -HOUR..HOUR)
            .prop_map(|(q, a, l, s, n)| Op::Query(q, a * 30_000, l, s, n)),
        4 => (-3i64..12).prop_map(Op::Again),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Retention),
    ]
}

fn sorted(r: QueryResult) -> Vec<ResultSeries> {
    let QueryResult::Matrix(mut m) = r else {
        panic!("not a matrix: {r:?}")
    };
    m.sort_by(|a, b| a.labels.cmp(&b.labels));
    m
}

fn run(ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(UnixNanos::from_millis(BASE + SPAN)));
    let mut config = StoreConfig {
        background: false,
        fsync: FsyncPolicy::Never,
        sample_partition_duration: Duration::from_secs(3600),
        clock: clock.clone(),
        ..StoreConfig::default()
    };
    config.compaction.min_segments = 2;
    config.retention = RetentionConfig {
        default_ttl: Some(Duration::from_secs(4 * 3600)),
        ..RetentionConfig::default()
    };
    let store = Store::open(dir.path(), config).unwrap();
    let cache = Arc::new(ResultCache::new(CacheConfig::default()));
    store.observe_samples(cache.clone());
    let tenant = TenantId::new("acme").unwrap();
    let series: Vec<SeriesDef> = (0..4)
        .map(|s| SeriesDef::new("m", MetricKind::Gauge, vec![("s".into(), s.to_string())]))
        .collect();
    let src = StoreSource::new(&store, tenant.clone());
    let budget = Budget::default();
    let mut last: Option<(usize, i64, i64, usize, i64)> = None;
    for op in ops {
        let op = match op {
            Op::Again(k) => match last {
                Some((q, start, len, step, before_end)) => {
                    Op::Query(q, start + k * STEPS[step], len, step, before_end)
                }
                None => continue,
            },
            other => other,
        };
        match op {
            Op::Write(points) => {
                let samples = points
                    .iter()
                    .map(|&(s, t, v)| Sample {
                        series: series[s as usize].id,
                        timestamp_ms: BASE + t,
                        value: v,
                    })
                    .collect();
                store
                    .append_metrics(
                        &tenant,
                        &MetricBatch {
                            series: series.clone(),
                            samples,
                        },
                    )
                    .unwrap();
            }
            Op::Query(qi, start, len, si, before_end) => {
                last = Some((qi, start, len, si, before_end));
                let (q, step) = (QUERIES[qi], STEPS[si]);
                let (start, end) = (BASE + start, BASE + start + len);
                let now = BASE + SPAN - before_end;
                let got = cache
                    .range_query(&src, &tenant, q, start, end, step, now, &budget)
                    .unwrap();
                let want = range_query(&src, q, start, end, step, &budget).unwrap();
                assert_same(sorted(got), sorted(want), q, start, end, step);
            }
            Op::Flush => store.flush().unwrap(),
            Op::Compact => {
                store.compact().unwrap();
            }
            Op::Retention => {
                clock.advance(HOUR * 1_000_000);
                store.apply_retention().unwrap();
            }
            Op::Again(_) => unreachable!("replaced above"),
        }
    }
}

fn assert_same(
    got: Vec<ResultSeries>,
    want: Vec<ResultSeries>,
    q: &str,
    start: i64,
    end: i64,
    step: i64,
) {
    assert_eq!(
        got,
        want,
        "{q} from {} to {} step {step}",
        start - BASE,
        end - BASE
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn cached_answers_equal_fresh_ones(ops in proptest::collection::vec(op(), 1..40)) {
        run(ops);
    }
}

/// The same request twice, a late sample between: the second answer has it.
#[test]
fn a_late_sample_changes_the_cached_answer() {
    run(vec![
        Op::Write(
            (0..4)
                .flat_map(|s| (0..1440).map(move |k| (s, k * 10_000, k as f64)))
                .collect(),
        ),
        Op::Query(0, HOUR, 2 * HOUR, 1, 0),
        Op::Query(0, HOUR, 2 * HOUR, 1, 0),
        Op::Write(vec![(2, 90 * MIN + 5_000, 0.0)]),
        Op::Query(0, HOUR, 2 * HOUR, 1, 0),
        Op::Flush,
        Op::Write(vec![(1, 100 * MIN, 1e6)]),
        Op::Query(0, HOUR + 7 * MIN, 2 * HOUR, 1, 0),
    ]);
}

/// Retention drops the first hour's partition: a cached answer over it must go with it.
#[test]
fn retention_changes_the_cached_answer() {
    run(vec![
        Op::Write(
            (0..4)
                .flat_map(|s| (0..1440).map(move |k| (s, k * 10_000, k as f64)))
                .collect(),
        ),
        Op::Flush,
        Op::Query(1, 0, 2 * HOUR, 1, 0),
        Op::Query(1, 0, 2 * HOUR, 1, 0),
        Op::Retention,
        Op::Query(1, 0, 2 * HOUR, 1, 0),
    ]);
}
