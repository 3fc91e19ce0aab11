//! RED aggregates (rate, errors, duration) over matching spans, per group and time bucket.
//!
//! Buckets are `[start + k*step, start + (k+1)*step)` over the query's time range, by span start.
//! Per bucket and group: `count`, `errors` (status `error`), `rate` = count / step seconds,
//! `error_ratio` = errors / count, and latency quantiles p50/p90/p99 in milliseconds, exact from
//! the bucket's durations with linear interpolation between closest ranks (numpy's default,
//! `q * (n - 1)`). The totals row of each group aggregates the whole range the same way.
//!
//! When the range starts on a whole minute, the step is whole minutes and every condition is
//! pushed down to storage, segments whose rollups answer exactly contribute their per-minute
//! rollup rows (counts, errors, every duration) instead of their spans; the result is the same.

use std::collections::BTreeMap;

use arrow_array::{
    Array, Int64Array, RecordBatch, StringArray, TimestampNanosecondArray, UInt8Array,
};
use serde::Serialize;
use sightline_storage::rollup::{self, RollupView};
use sightline_storage::schema::col;
use sightline_storage::{
    Deadline, ScanRequest, ScanStats, Signal, StatusCode, Store, TenantId, TimeRange,
};

use super::filter::{Cond, column};
use super::search::scan_matching;
use crate::error::{QueryError, Result};
use crate::quantile::quantile;

/// Most buckets one RED query may produce.
pub const MAX_BUCKETS: i64 = 11_000;

/// Most spans one RED query folds (their durations are kept for exact quantiles: 8 bytes
/// each, twice).
pub const MAX_RED_SPANS: u64 = 50_000_000;

/// What spans are grouped by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    /// `service.name`.
    #[default]
    Service,
    /// `gen_ai.request.model` (`""` for spans without one).
    Model,
    /// `gen_ai.operation.name`.
    Operation,
    /// Span name.
    Name,
}

impl GroupBy {
    fn column(self) -> &'static str {
        match self {
            GroupBy::Service => col::SERVICE_NAME,
            GroupBy::Model => col::GEN_AI_REQUEST_MODEL,
            GroupBy::Operation => col::GEN_AI_OPERATION,
            GroupBy::Name => col::SPAN_NAME,
        }
    }
}

/// A RED query.
#[derive(Clone, Debug)]
pub struct RedQuery {
    /// Range (bounded).
    pub time: TimeRange,
    /// Bucket width, ns.
    pub step_nanos: i64,
    /// Grouping.
    pub group_by: GroupBy,
    /// Conditions on spans.
    pub conds: Vec<Cond>,
    /// When the query must stop ([`QueryError::Timeout`]): the scan checks it per row group
    /// and batch, the folding per batch.
    pub deadline: Deadline,
}

/// Aggregates of one bucket (or a whole range).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RedPoint {
    /// Bucket start, ns (the range start for totals).
    pub start_unix_nano: i64,
    /// Spans.
    pub count: u64,
    /// Spans with status `error`.
    pub errors: u64,
    /// Spans per second.
    pub rate: f64,
    /// `errors / count`.
    pub error_ratio: f64,
    /// Median duration, ms.
    pub p50_ms: f64,
    /// 90th percentile duration, ms.
    pub p90_ms: f64,
    /// 99th percentile duration, ms.
    pub p99_ms: f64,
}

/// One group's series.
#[derive(Clone, Debug, Serialize)]
pub struct RedSeries {
    /// Group value.
    pub group: String,
    /// Whole-range aggregate.
    pub total: RedPoint,
    /// Non-empty buckets, by time.
    pub buckets: Vec<RedPoint>,
}

/// Result of a RED query.
#[derive(Clone, Debug, Serialize)]
pub struct RedResult {
    /// Grouping used.
    pub group_by: GroupBy,
    /// Bucket width, ns.
    pub step_nanos: i64,
    /// Series by group value.
    pub series: Vec<RedSeries>,
    /// Scan statistics.
    pub stats: ScanStats,
}

fn point(start: i64, secs: f64, durations: &[i64], errors: u64) -> RedPoint {
    let mut ms: Vec<f64> = durations.iter().map(|d| *d as f64 / 1e6).collect();
    let count = ms.len() as u64;
    // Quantiles of no spans read 0, not NaN (JSON has no NaN).
    let mut q = |q: f64| {
        if ms.is_empty() {
            0.0
        } else {
            quantile(&mut ms, q)
        }
    };
    let (p50_ms, p90_ms, p99_ms) = (q(0.5), q(0.9), q(0.99));
    RedPoint {
        start_unix_nano: start,
        count,
        errors,
        rate: if secs > 0.0 { count as f64 / secs } else { 0.0 },
        error_ratio: if count > 0 {
            errors as f64 / count as f64
        } else {
            0.0
        },
        p50_ms,
        p90_ms,
        p99_ms,
    }
}

/// Per group, per bucket index: the durations and the error count.
type Acc = BTreeMap<String, BTreeMap<i64, (Vec<i64>, u64)>>;

fn count_spans(total: &mut u64, n: u64) -> Result<()> {
    *total += n;
    if *total > MAX_RED_SPANS {
        return Err(QueryError::Execution(format!(
            "RED over more than {MAX_RED_SPANS} spans; narrow the time range or add filters"
        )));
    }
    Ok(())
}

/// Folds the rows of `b` that `mask` keeps.
fn fold_rows(
    q: &RedQuery,
    b: &RecordBatch,
    mask: &[bool],
    acc: &mut Acc,
    total: &mut u64,
) -> Result<()> {
    let g = column::<StringArray>(b, q.group_by.column())?;
    let start = column::<TimestampNanosecondArray>(b, col::START_TIME)?;
    let dur = column::<Int64Array>(b, col::DURATION)?;
    let status = column::<UInt8Array>(b, col::STATUS_CODE)?;
    for (i, keep) in mask.iter().enumerate() {
        if !keep {
            continue;
        }
        let key = if g.is_null(i) { "" } else { g.value(i) };
        let bucket = (start.value(i) - q.time.start.0) / q.step_nanos;
        count_spans(total, 1)?;
        // Look up before inserting: no allocation per row for groups already seen.
        let buckets = match acc.get_mut(key) {
            Some(b) => b,
            None => acc.entry(key.to_owned()).or_default(),
        };
        let e = buckets.entry(bucket).or_default();
        e.0.push(dur.value(i));
        e.1 += u64::from(status.value(i) == StatusCode::Error as u8);
    }
    Ok(())
}

/// Folds rollup rows (each one minute of one group; whole minutes fall in one bucket).
fn fold_rollup(q: &RedQuery, b: &RecordBatch, acc: &mut Acc, total: &mut u64) -> Result<()> {
    let g = column::<StringArray>(b, q.group_by.column())?;
    let start = column::<TimestampNanosecondArray>(b, col::START_TIME)?;
    let view = RollupView::new(b)?;
    if !view.has_durations() {
        return Err(QueryError::Execution(
            "rollup rows without their durations cannot answer RED".into(),
        ));
    }
    for (i, &n) in view.weights().iter().enumerate() {
        let key = if g.is_null(i) { "" } else { g.value(i) };
        let bucket = (start.value(i).max(q.time.start.0) - q.time.start.0) / q.step_nanos;
        count_spans(total, n)?;
        let buckets = match acc.get_mut(key) {
            Some(b) => b,
            None => acc.entry(key.to_owned()).or_default(),
        };
        let e = buckets.entry(bucket).or_default();
        e.0.extend_from_slice(view.durations(i));
        if view.is_error(i) {
            e.1 += n;
        }
    }
    Ok(())
}

/// Runs a RED query.
pub fn red(store: &Store, tenant: &TenantId, q: &RedQuery) -> Result<RedResult> {
    if q.time.start.0 == i64::MIN || q.time.end.0 == i64::MAX {
        return Err(QueryError::BadRequest(
            "RED queries need a bounded time range".into(),
        ));
    }
    if q.step_nanos <= 0 {
        return Err(QueryError::BadRequest("step must be positive".into()));
    }
    let span = q.time.end.0.saturating_sub(q.time.start.0);
    if span / q.step_nanos >= MAX_BUCKETS {
        return Err(QueryError::BadRequest(format!(
            "more than {MAX_BUCKETS} buckets; use a larger step"
        )));
    }
    let group_col = q.group_by.column();
    // group -> bucket index -> (durations, errors)
    let mut acc: Acc = BTreeMap::new();
    let mut total: u64 = 0;
    let extra = [group_col, col::START_TIME, col::DURATION, col::STATUS_CODE];
    // Minute rollups fold whole into start-aligned buckets when start and step are whole
    // minutes; storage decides per segment whether the conditions let it use them.
    let minute = rollup::BUCKET_NANOS;
    let stats = if q.time.start.0 % minute == 0
        && q.step_nanos % minute == 0
        && q.conds.iter().all(|c| c.pushdown().is_some())
    {
        let mut req = ScanRequest::new(tenant.clone(), Signal::Spans, q.time)
            .project(&extra)
            .until(q.deadline.clone());
        req.predicates = q.conds.iter().filter_map(Cond::pushdown).collect();
        req.rollups = true;
        req.rollup_durations = true;
        let res = store.scan(&req)?;
        for b in &res.batches {
            q.deadline.check()?;
            fold_rows(q, b, &vec![true; b.num_rows()], &mut acc, &mut total)?;
        }
        for b in &res.rollups {
            q.deadline.check()?;
            fold_rollup(q, b, &mut acc, &mut total)?;
        }
        res.stats
    } else {
        scan_matching(
            store,
            tenant,
            (q.time, &q.deadline),
            &q.conds,
            &extra,
            |b, mask| fold_rows(q, b, mask, &mut acc, &mut total),
        )?
    };
    let step_secs = q.step_nanos as f64 / 1e9;
    let range_secs = span as f64 / 1e9;
    let series = acc
        .into_iter()
        .map(|(group, buckets)| {
            let mut all = Vec::new();
            let mut all_errors = 0;
            let mut points = Vec::new();
            for (k, (d, e)) in buckets {
                all.extend_from_slice(&d);
                all_errors += e;
                points.push(point(q.time.start.0 + k * q.step_nanos, step_secs, &d, e));
            }
            RedSeries {
                group,
                total: point(q.time.start.0, range_secs, &all, all_errors),
                buckets: points,
            }
        })
        .collect();
    Ok(RedResult {
        group_by: q.group_by,
        step_nanos: q.step_nanos,
        series,
        stats,
    })
}
