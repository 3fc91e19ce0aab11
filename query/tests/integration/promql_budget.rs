//! The PromQL evaluation budget: the sample limit counts what is held at once and refuses a
//! query before it holds the memory; the deadline stops an evaluation (and its storage scans)
//! as soon as it passes or the request is cancelled.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use sightline_query::QueryError;
use sightline_query::promql::value::RawSeries;
use sightline_query::promql::{
    Budget, DEFAULT_MAX_SAMPLES, MemorySource, QueryResult, SampleSource, StoreSource,
    instant_query, range_query,
};
use sightline_storage::{
    Deadline, FsyncPolicy, Matcher, MetricBatch, MetricKind, Sample, SeriesDef, Store, StoreConfig,
    TenantId,
};

/// `n` series `m{i="0"}` .. with a sample of value 1 every minute in `[0, minutes)`.
fn source(n: usize, minutes: i64) -> MemorySource {
    let series = (0..n)
        .map(|i| {
            let mut labels = vec![
                ("__name__".to_owned(), "m".to_owned()),
                ("i".to_owned(), i.to_string()),
            ];
            labels.sort();
            let timestamps: Vec<i64> = (0..minutes).map(|k| k * 60_000).collect();
            RawSeries {
                labels: Arc::new(labels),
                values: vec![1.0; timestamps.len()],
                timestamps,
            }
        })
        .collect();
    MemorySource { series }
}

fn budget(max_samples: usize) -> Budget {
    Budget::default().with_max_samples(max_samples)
}

fn vector_len(r: QueryResult) -> usize {
    match r {
        QueryResult::Vector(v) => v.len(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_limit_counts_samples_held_at_once() {
    // Instant query at 10 min over 3 series: the selector loads the 6 samples of each series
    // in (5 min, 10 min] (18) while its result of 3 points is built: 21 at once.
    let src = source(3, 60);
    let at = 600_000;
    assert_eq!(
        vector_len(instant_query(&src, "m", at, &budget(21)).unwrap()),
        3
    );
    assert!(matches!(
        instant_query(&src, "m", at, &budget(20)),
        Err(QueryError::TooManySamples)
    ));
    // `sum` releases its input: the peak is still the selector's.
    assert_eq!(
        vector_len(instant_query(&src, "sum(m)", at, &budget(21)).unwrap()),
        1
    );
    // `m + m` holds the left result (3) while the right side peaks (21): 24.
    assert_eq!(
        vector_len(instant_query(&src, "m + m", at, &budget(24)).unwrap()),
        3
    );
    assert!(matches!(
        instant_query(&src, "m + m", at, &budget(23)),
        Err(QueryError::TooManySamples)
    ));
    assert_eq!(
        QueryError::TooManySamples.to_string(),
        "query processing would load too many samples into memory in query execution"
    );
}

/// Resident memory of this process, bytes (Linux), to show a refused query never held its
/// result.
fn rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = s.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

#[test]
fn an_over_budget_query_is_refused_before_it_holds_the_memory() {
    // A range query needing more than the budget: 20 series x 60 samples load 1,200.
    let src = source(20, 60);
    assert!(matches!(
        range_query(&src, "m", 0, 3_600_000, 60_000, &budget(1_000)),
        Err(QueryError::TooManySamples)
    ));
    // 5,000 series x 11,000 steps would hold 55 million points (880 MB of slots) under the
    // default budget of 50 million; the selector reserves them before allocating and fails.
    let src = source(5_000, 1);
    let before = rss_bytes();
    let t0 = Instant::now();
    let r = range_query(&src, "m", 0, 10_999 * 60_000, 60_000, &Budget::default());
    assert!(matches!(r, Err(QueryError::TooManySamples)), "{r:?}");
    assert!(t0.elapsed() < Duration::from_secs(5));
    if let (Some(a), Some(b)) = (before, rss_bytes()) {
        assert!(b.saturating_sub(a) < 300 << 20, "grew {} MB", (b - a) >> 20);
    }
    assert_eq!(DEFAULT_MAX_SAMPLES, 50_000_000);
    // Within the budget the same data evaluates.
    let r = range_query(&src, "sum(m)", 0, 600_000, 60_000, &Budget::default()).unwrap();
    let QueryResult::Matrix(m) = r else { panic!() };
    assert_eq!(m[0].points[0].1, 5_000.0);
}

#[test]
fn an_expired_or_cancelled_deadline_is_a_timeout() {
    let src = source(3, 60);
    let past = Budget::until(Deadline::at(Instant::now() - Duration::from_millis(1)));
    assert!(matches!(
        instant_query(&src, "m", 600_000, &past),
        Err(QueryError::Timeout)
    ));
    assert!(matches!(
        range_query(&src, "1 + 1", 0, 600_000, 60_000, &past),
        Err(QueryError::Timeout)
    ));
    let flag = Arc::new(AtomicBool::new(true));
    let cancelled = Budget::until(Deadline::none().with_cancel(flag));
    assert!(matches!(
        range_query(&src, "rate(m[5m])", 0, 600_000, 60_000, &cancelled),
        Err(QueryError::Timeout)
    ));
    let later = Budget::until(Deadline::after(Duration::from_secs(3600)));
    assert_eq!(
        vector_len(instant_query(&src, "m", 600_000, &later).unwrap()),
        3
    );
}

/// A source that cancels the request when it is first asked for samples, as a client that
/// hangs up mid-query would.
struct CancelOnSelect {
    inner: MemorySource,
    flag: Arc<AtomicBool>,
    selects: AtomicUsize,
}

impl SampleSource for CancelOnSelect {
    fn select(
        &self,
        matchers: &[Matcher],
        start_ms: i64,
        end_ms: i64,
        budget: &Budget,
    ) -> sightline_query::Result<Vec<RawSeries>> {
        self.selects.fetch_add(1, Ordering::Relaxed);
        let out = self.inner.select(matchers, start_ms, end_ms, budget);
        self.flag.store(true, Ordering::Relaxed);
        out
    }
}

#[test]
fn a_cancel_stops_the_evaluation_where_it_is() {
    let flag = Arc::new(AtomicBool::new(false));
    let src = CancelOnSelect {
        inner: source(3, 60),
        flag: Arc::clone(&flag),
        selects: AtomicUsize::new(0),
    };
    let b = Budget::until(Deadline::none().with_cancel(flag));
    let r = range_query(&src, "m + m + m", 0, 600_000, 60_000, &b);
    assert!(matches!(r, Err(QueryError::Timeout)), "{r:?}");
    // The first selector's series loop saw the cancel; the other selectors never ran.
    assert_eq!(src.selects.load(Ordering::Relaxed), 1);
}

#[test]
fn the_store_source_passes_the_budget_to_its_scans() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(
        dir.path(),
        StoreConfig {
            background: false,
            fsync: FsyncPolicy::Never,
            ..StoreConfig::default()
        },
    )
    .unwrap();
    let t = TenantId::new("budget").unwrap();
    let def = SeriesDef::new("m", MetricKind::Gauge, vec![("i".into(), "0".into())]);
    let samples = (0..60)
        .map(|k| Sample {
            series: def.id,
            timestamp_ms: k * 60_000,
            value: 1.0,
        })
        .collect();
    let batch = MetricBatch {
        series: vec![def],
        samples,
    };
    store.append_metrics(&t, &batch).unwrap();
    store.flush().unwrap();
    let src = StoreSource::new(&store, t);
    let r = range_query(&src, "m", 0, 3_540_000, 60_000, &Budget::default()).unwrap();
    let QueryResult::Matrix(m) = r else { panic!() };
    assert_eq!(m[0].points.len(), 60);
    assert!(matches!(
        range_query(&src, "m", 0, 3_540_000, 60_000, &budget(59)),
        Err(QueryError::TooManySamples)
    ));
    let past = Budget::until(Deadline::at(Instant::now() - Duration::from_millis(1)));
    assert!(matches!(
        range_query(&src, "m", 0, 3_540_000, 60_000, &past),
        Err(QueryError::Timeout)
    ));
}
