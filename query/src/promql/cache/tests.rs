//! The cache against a memory source that a test changes between (and during) requests: every
//! answer must equal a fresh evaluation of the same request.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use sightline_storage::Matcher;

use super::*;
use crate::promql::value::RawSeries;
use crate::promql::{MemorySource, range_query};

const MIN: i64 = 60_000;
const HOUR: i64 = 60 * MIN;

type Hook = Box<dyn FnOnce() + Send>;

/// A memory source whose samples change; `after_select` runs once, after the next read.
#[derive(Default)]
struct Changing {
    data: RwLock<MemorySource>,
    after_select: Mutex<Option<Hook>>,
}

impl SampleSource for Changing {
    fn select(
        &self,
        matchers: &[Matcher],
        start_ms: i64,
        end_ms: i64,
        budget: &Budget,
    ) -> Result<Vec<RawSeries>> {
        let r = self.data.read().select(matchers, start_ms, end_ms, budget);
        if let Some(hook) = self.after_select.lock().take() {
            hook();
        }
        r
    }
}

impl Changing {
    /// Counters `c{i="0".."n"}` growing by `i + 1` every 10 s over `0..=until`.
    fn counters(n: usize, until: i64) -> Arc<Self> {
        let s = Self::default();
        for i in 0..n {
            let ts: Vec<i64> = (0..=until / 10_000).map(|k| k * 10_000).collect();
            let values = ts
                .iter()
                .map(|t| (t / 10_000 * (i as i64 + 1)) as f64)
                .collect();
            s.data.write().series.push(RawSeries {
                labels: Arc::new(vec![
                    ("__name__".into(), "c".into()),
                    ("i".into(), i.to_string()),
                ]),
                timestamps: ts,
                values,
            });
        }
        Arc::new(s)
    }

    /// Sets series `i`'s sample at `t` to `v` (added, or replaced) and tells `cache`.
    fn write(&self, cache: &ResultCache, i: usize, t: i64, v: f64) {
        {
            let mut d = self.data.write();
            let s = &mut d.series[i];
            match s.timestamps.binary_search(&t) {
                Ok(k) => s.values[k] = v,
                Err(k) => {
                    s.timestamps.insert(k, t);
                    s.values.insert(k, v);
                }
            }
        }
        cache.samples_written(&tenant(), UnixNanos::from_millis(t));
    }
}

fn tenant() -> TenantId {
    TenantId::new("t").unwrap()
}

fn cache() -> ResultCache {
    ResultCache::new(CacheConfig::default())
}

/// The cached answer, checked against a fresh evaluation.
fn ask(cache: &ResultCache, src: &Changing, q: &str, start: i64, end: i64, step: i64, now: i64) {
    let b = Budget::default();
    let got = cache
        .range_query(src, &tenant(), q, start, end, step, now, &b)
        .unwrap();
    let want = range_query(src, q, start, end, step, &b).unwrap();
    assert_eq!(sorted(got), sorted(want), "{q} {start}..{end} step {step}");
}

fn sorted(r: QueryResult) -> Vec<ResultSeries> {
    let QueryResult::Matrix(mut m) = r else {
        panic!("not a matrix")
    };
    m.sort_by(|a, b| a.labels.cmp(&b.labels));
    m
}

const RATE: &str = "sum by (i) (rate(c[5m]))";

#[test]
fn a_sliding_window_evaluates_only_its_new_steps() {
    let src = Changing::counters(3, 6 * HOUR);
    let c = cache();
    let now = 6 * HOUR + 10 * MIN;
    ask(&c, &src, RATE, HOUR, 5 * HOUR, MIN, now);
    let first = c.stats();
    assert_eq!((first.misses, first.hits, first.entries), (1, 0, 1));
    assert_eq!(first.steps_evaluated, 241);
    // The window moves on by 7 minutes: 233 steps come from the entry, 7 are evaluated.
    ask(&c, &src, RATE, HOUR + 7 * MIN, 5 * HOUR + 7 * MIN, MIN, now);
    let second = c.stats();
    assert_eq!(second.hits, 1);
    assert_eq!(second.steps_served, 234);
    assert_eq!(second.steps_evaluated - first.steps_evaluated, 7);
    // Another phase of the grid is another entry.
    ask(&c, &src, RATE, HOUR + 30_000, 2 * HOUR, MIN, now);
    assert_eq!(c.stats().entries, 2);
}

#[test]
fn a_late_sample_is_seen_by_the_next_request() {
    let src = Changing::counters(2, 6 * HOUR);
    let c = cache();
    let now = 6 * HOUR + 10 * MIN;
    ask(&c, &src, RATE, HOUR, 5 * HOUR, MIN, now);
    // A late, out-of-order sample in the middle of the cached steps (a counter reset).
    src.write(&c, 1, 3 * HOUR + 5_000, 0.0);
    ask(&c, &src, RATE, HOUR, 5 * HOUR, MIN, now);
    // A replaced value at a cached time.
    src.write(&c, 0, 2 * HOUR, 1e9);
    ask(&c, &src, RATE, HOUR, 5 * HOUR, MIN, now);
    assert!(c.stats().invalidations >= 2);
    // Samples after every kept step change nothing kept.
    let before = c.stats();
    src.write(&c, 0, 6 * HOUR + 10_000, 1e12);
    assert_eq!(c.stats().invalidations, before.invalidations);
}

#[test]
fn a_write_the_evaluation_missed_keeps_it_from_being_kept() {
    let src = Changing::counters(2, 6 * HOUR);
    let c = Arc::new(cache());
    let now = 6 * HOUR + 10 * MIN;
    // While the first request reads, a late sample arrives that its read did not see.
    let (s2, c2) = (Arc::clone(&src), Arc::clone(&c));
    *src.after_select.lock() = Some(Box::new(move || s2.write(&c2, 0, 2 * HOUR, 1e9)));
    let b = Budget::default();
    c.range_query(&*src, &tenant(), RATE, HOUR, 5 * HOUR, MIN, now, &b)
        .unwrap();
    // The next request must see the late sample: it is evaluated from 2 h on.
    let evaluated = c.stats().steps_evaluated;
    ask(&c, &src, RATE, HOUR, 5 * HOUR, MIN, now);
    assert_eq!(c.stats().steps_evaluated - evaluated, 181);
}

#[test]
fn a_removal_drops_the_tenants_entries() {
    let src = Changing::counters(1, 6 * HOUR);
    let c = cache();
    let now = 6 * HOUR + 10 * MIN;
    ask(&c, &src, RATE, HOUR, 5 * HOUR, MIN, now);
    {
        let mut d = src.data.write();
        let s = &mut d.series[0];
        let cut = s.timestamps.partition_point(|t| *t <= 2 * HOUR);
        s.timestamps.drain(..cut);
        s.values.drain(..cut);
    }
    c.samples_removed(&tenant());
    assert_eq!(c.stats().entries, 0);
    ask(&c, &src, RATE, HOUR, 5 * HOUR, MIN, now);
}

#[test]
fn recent_steps_and_pinned_queries_are_not_kept() {
    let src = Changing::counters(1, 6 * HOUR);
    let c = cache();
    let now = 6 * HOUR;
    // Steps within 5 minutes of now are evaluated on every request.
    ask(&c, &src, RATE, 5 * HOUR, 6 * HOUR, MIN, now);
    let s = c.stats();
    ask(&c, &src, RATE, 5 * HOUR, 6 * HOUR, MIN, now);
    assert_eq!(c.stats().steps_evaluated - s.steps_evaluated, 5);
    // `@` pins a selector to a time of its own: evaluated in full, never kept.
    let before = c.stats();
    ask(&c, &src, "rate(c[5m] @ 7200)", HOUR, 2 * HOUR, MIN, now);
    ask(&c, &src, "rate(c[5m] @ end())", HOUR, 2 * HOUR, MIN, now);
    assert_eq!(c.stats().entries, before.entries);
    // A negative offset reads samples after the step: the steps it reads are not kept until
    // those samples are old enough, and a late sample there drops the step.
    let q = "rate(c[5m] offset -30m)";
    ask(&c, &src, q, HOUR, 5 * HOUR, MIN, now);
    src.write(&c, 0, 4 * HOUR + 10 * MIN + 5_000, 0.0);
    ask(&c, &src, q, HOUR, 5 * HOUR, MIN, now);
}

#[test]
fn entries_stay_within_their_bytes() {
    let src = Changing::counters(20, 6 * HOUR);
    let c = ResultCache::new(CacheConfig {
        max_bytes: 400_000,
        ..CacheConfig::default()
    });
    let now = 6 * HOUR + 10 * MIN;
    for k in 0..20 {
        ask(&c, &src, "rate(c[5m])", k * 1000, 2 * HOUR, 30_000, now);
        assert!(c.stats().bytes <= 400_000);
    }
    assert!(c.stats().entries < 20);
    // An answer larger than an eighth of the budget is not kept.
    let small = ResultCache::new(CacheConfig {
        max_bytes: 10_000,
        ..CacheConfig::default()
    });
    ask(&small, &src, "rate(c[5m])", 0, 2 * HOUR, 30_000, now);
    assert_eq!(small.stats().entries, 0);
}

#[test]
fn an_off_cache_evaluates_everything() {
    let src = Changing::counters(2, 2 * HOUR);
    let c = ResultCache::new(CacheConfig {
        max_bytes: 0,
        ..CacheConfig::default()
    });
    ask(&c, &src, RATE, 0, HOUR, MIN, 3 * HOUR);
    ask(&c, &src, RATE, 0, HOUR, MIN, 3 * HOUR);
    assert_eq!(c.stats(), CacheStats::default());
}
