//! Evaluation of parsed LogQL over one tenant's stored logs.
//!
//! Log queries scan the range (stream-selector matchers on `service_name` are pushed into the
//! scan as `service.name` matchers, and `|= "text"` line filters as body predicates the token
//! indexes narrow; everything else is evaluated here), first for the times of the lines kept,
//! then whole lines a slice of times at a time in the requested direction, and stop after
//! `limit` lines pass the pipeline ([`super::pipeline`]). Metric queries run the pipeline over
//! every line of `[start - range, end]` once, keep per-series (or, under a sum, per-group)
//! timestamps and byte prefix sums, and answer each step's window `(t - range, t]` by binary
//! search.
//!
//! Every entry point takes a [`Deadline`]: the scans check it per row group and batch, and
//! evaluation per decoded batch and per step; past it the query fails with
//! [`QueryError::Timeout`].

use std::collections::{BTreeMap, BTreeSet};

use arrow_array::{Array, TimestampNanosecondArray};
use sightline_storage::columnar::LogRows;
use sightline_storage::schema::col;
use sightline_storage::{
    Deadline, LogRecord, Matcher, Predicate, ScanRequest, ScanStats, Signal, Store, TenantId,
    TimeRange, UnixNanos,
};

use super::pipeline::run_pipeline;
use super::{AggOp, BinOp, Expr, Grouping, LineOp, LogExpr, MetricExpr, RangeFunc, Stage};
use crate::error::{QueryError, Result};
use crate::logs::labels::{Labels, LineLabels, label_value, line_labels};
use crate::logs::search::{Direction, row_decoders, sort_hits};
use crate::logs::{MAX_BUCKETS, MAX_LIMIT};

/// Most series one metric query may produce.
pub const MAX_SERIES: usize = 20_000;

/// One stream of a log query result.
#[derive(Clone, Debug, PartialEq)]
pub struct Stream {
    /// Stream labels, structured metadata and parsed labels.
    pub labels: Labels,
    /// `(time ns, line)` in the requested direction.
    pub entries: Vec<(i64, String)>,
}

/// One series of a metric result.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Labels.
    pub labels: Labels,
    /// `(time ns, value)` in time order.
    pub points: Vec<(i64, f64)>,
}

/// A query's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum QueryValue {
    /// Log lines grouped per stream.
    Streams(Vec<Stream>),
    /// Range query of a metric expression.
    Matrix(Vec<Series>),
    /// Instant query of a metric expression (one point per series).
    Vector(Vec<Series>),
}

/// What a query processed.
#[derive(Clone, Debug, Default)]
pub struct QueryStats {
    /// Lines read and run through the pipeline.
    pub lines_processed: u64,
    /// Body bytes of those lines.
    pub bytes_processed: u64,
    /// Lines (or samples) returned.
    pub entries_returned: u64,
    /// Storage pruning statistics.
    pub explain: ScanStats,
}

/// A query's answer and its statistics.
#[derive(Clone, Debug)]
pub struct QueryOutput {
    /// The answer.
    pub value: QueryValue,
    /// Statistics.
    pub stats: QueryStats,
}

/// Parameters of a range query.
#[derive(Clone, Copy, Debug)]
pub struct RangeParams {
    /// Start (ns, inclusive).
    pub start_ns: i64,
    /// End (ns, inclusive).
    pub end_ns: i64,
    /// Step between metric evaluations (ns).
    pub step_ns: i64,
    /// Most lines a log query returns.
    pub limit: usize,
    /// Order of log lines.
    pub direction: Direction,
}

/// Runs a query over `[start, end]`: log queries give streams, metric queries a matrix.
pub fn query_range(
    store: &Store,
    tenant: &TenantId,
    expr: &Expr,
    p: RangeParams,
    deadline: &Deadline,
) -> Result<QueryOutput> {
    if p.end_ns < p.start_ns {
        return Err(QueryError::BadRequest("end is before start".into()));
    }
    let mut stats = QueryStats::default();
    let value = match expr {
        Expr::Log(log) => {
            QueryValue::Streams(log_query(store, tenant, log, p, &mut stats, deadline)?)
        }
        Expr::Metric(m) => {
            if p.step_ns <= 0 {
                return Err(QueryError::BadRequest("step must be positive".into()));
            }
            let steps = (i128::from(p.end_ns) - i128::from(p.start_ns)) / i128::from(p.step_ns) + 1;
            if steps > MAX_BUCKETS as i128 {
                return Err(QueryError::BadRequest(format!(
                    "{steps} steps exceed the limit of {MAX_BUCKETS}; use a larger step"
                )));
            }
            let span = (p.start_ns, p.end_ns);
            let prepared = prepare(store, tenant, m, span, &mut stats, deadline)?;
            let mut out: BTreeMap<Labels, Vec<(i64, f64)>> = BTreeMap::new();
            let mut t = p.start_ns;
            while t <= p.end_ns {
                deadline.check()?;
                for (labels, v) in eval_at(&prepared, t)? {
                    out.entry(labels).or_default().push((t, v));
                }
                if out.len() > MAX_SERIES {
                    return Err(QueryError::Execution(format!(
                        "more than {MAX_SERIES} series; aggregate with sum by (...)"
                    )));
                }
                t = match t.checked_add(p.step_ns) {
                    Some(t) => t,
                    None => break,
                };
            }
            stats.entries_returned = out.values().map(|v| v.len() as u64).sum();
            QueryValue::Matrix(
                out.into_iter()
                    .map(|(labels, points)| Series { labels, points })
                    .collect(),
            )
        }
    };
    Ok(QueryOutput { value, stats })
}

/// Evaluates a metric query at one instant. Log queries are refused, as Loki 3 does.
pub fn query_instant(
    store: &Store,
    tenant: &TenantId,
    expr: &Expr,
    time_ns: i64,
    deadline: &Deadline,
) -> Result<QueryOutput> {
    let Expr::Metric(m) = expr else {
        return Err(QueryError::BadRequest(
            "log queries are not supported as an instant query type; use query_range".into(),
        ));
    };
    let mut stats = QueryStats::default();
    let prepared = prepare(store, tenant, m, (time_ns, time_ns), &mut stats, deadline)?;
    let v = eval_at(&prepared, time_ns)?;
    stats.entries_returned = v.len() as u64;
    Ok(QueryOutput {
        value: QueryValue::Vector(
            v.into_iter()
                .map(|(labels, v)| Series {
                    labels,
                    points: vec![(time_ns, v)],
                })
                .collect(),
        ),
        stats,
    })
}

/// A line selected by a stream selector, with its labels and size.
#[derive(Clone, Debug)]
pub struct SelectedLine {
    /// Event time (ns).
    pub time: i64,
    /// Stream labels and metadata.
    pub labels: LineLabels,
    /// Body bytes.
    pub bytes: usize,
}

/// Every line in `time` whose stream labels satisfy `selector` (used by the label, series and
/// stats endpoints).
pub fn select_lines(
    store: &Store,
    tenant: &TenantId,
    selector: &[Matcher],
    time: TimeRange,
    deadline: &Deadline,
) -> Result<(Vec<SelectedLine>, ScanStats)> {
    let scan = store.scan(&scan_request(tenant, selector, &[], time).until(deadline.clone()))?;
    let mut out = Vec::new();
    for b in &scan.batches {
        deadline.check()?;
        for rec in sightline_storage::columnar::logs_from_batch(b)? {
            let labels = line_labels(&rec);
            if selector_matches(selector, &labels.stream) {
                out.push(SelectedLine {
                    time: rec.time.0,
                    bytes: body_text(&rec).len(),
                    labels,
                });
            }
        }
    }
    Ok((out, scan.stats))
}

/// The scan of a selector's lines over `time`: `service_name` matchers and the pipeline's
/// `|= "text"` filters go to the store (which narrows a filter's lines with its token indexes
/// before reading them); the pipeline still runs on every line returned.
fn scan_request(
    tenant: &TenantId,
    selector: &[Matcher],
    stages: &[Stage],
    time: TimeRange,
) -> ScanRequest {
    let mut req = ScanRequest::new(tenant.clone(), Signal::Logs, time);
    for s in stages {
        if let Stage::Line {
            op: LineOp::Contains,
            text,
            ..
        } = s
            && !text.is_empty()
            && text.len() <= sightline_storage::text_index::MAX_QUERY_BYTES
        {
            req = req.with(Predicate::BodyContains(text.clone()));
        }
    }
    for m in selector {
        // `service_name` is the promoted `service.name` column: same values, same semantics.
        if m.key == "service_name"
            && let Ok(pushed) = Matcher::new("service.name", m.op, m.value.clone())
        {
            req = req.with(Predicate::Attr(pushed));
        }
    }
    req
}

/// Whether stream labels satisfy every matcher of a selector (a missing label is `""`).
pub fn selector_matches(selector: &[Matcher], stream: &Labels) -> bool {
    selector
        .iter()
        .all(|m| m.matches(stream.get(&m.key).map_or("", String::as_str)))
}

fn body_text(rec: &LogRecord) -> String {
    rec.body.render()
}

fn closed_range(start_ns: i64, end_ns: i64) -> TimeRange {
    TimeRange {
        start: UnixNanos(start_ns),
        end: UnixNanos(end_ns.saturating_add(1)),
    }
}

/// The newest (or oldest) `limit` lines of a log query. The store first returns only the times
/// of the lines its predicates keep (selector's `service_name`, line filters); whole lines are
/// then read a slice of those times at a time, newest first (the first slice holds the `limit`
/// newest, each next one twice as many), through the selector and the pipeline, until `limit`
/// lines passed or the times run out. A query whose pipeline drops few lines reads about
/// `limit` whole lines instead of every line of the range.
fn log_query(
    store: &Store,
    tenant: &TenantId,
    log: &LogExpr,
    p: RangeParams,
    stats: &mut QueryStats,
    deadline: &Deadline,
) -> Result<Vec<Stream>> {
    let limit = p.limit.min(MAX_LIMIT);
    let range = closed_range(p.start_ns, p.end_ns);
    let request = |time| scan_request(tenant, &log.selector, &log.stages, time);
    let light = store.scan(&request(range).project(&[col::TIME]).until(deadline.clone()))?;
    stats.explain.add(&light.stats);
    let mut times = Vec::new();
    for b in &light.batches {
        times.extend_from_slice(time_column(b)?.values());
    }
    drop(light);
    let backward = p.direction == Direction::Backward;
    if backward {
        times.sort_unstable_by(|a, b| b.cmp(a));
    } else {
        times.sort_unstable();
    }
    let mut streams: BTreeMap<Labels, Vec<(i64, String)>> = BTreeMap::new();
    let mut taken = 0;
    let (mut done, mut window) = (0usize, limit.max(1));
    // The slice before this one ended (exclusive) at this time.
    let mut edge = if backward { range.end.0 } else { range.start.0 };
    while taken < limit && done < times.len() {
        deadline.check()?;
        let mut upto = done.saturating_add(window).min(times.len());
        let cutoff = times[upto - 1];
        while upto < times.len() && times[upto] == cutoff {
            upto += 1;
        }
        let slice = if backward {
            TimeRange {
                start: UnixNanos(cutoff),
                end: UnixNanos(edge),
            }
        } else {
            TimeRange {
                start: UnixNanos(edge),
                end: UnixNanos(cutoff.saturating_add(1)),
            }
        };
        edge = if backward {
            cutoff
        } else {
            cutoff.saturating_add(1)
        };
        done = upto;
        window = window.saturating_mul(2);
        let scan = store.scan(&request(slice).until(deadline.clone()))?;
        stats.explain.add(&scan.stats);
        let mut hits = Vec::new();
        for (bi, b) in scan.batches.iter().enumerate() {
            let t = time_column(b)?;
            hits.extend((0..b.num_rows()).map(|r| (t.value(r), bi, r)));
        }
        sort_hits(&mut hits, p.direction);
        let decoders = row_decoders(&scan.batches)?;
        for (n, (t, bi, row)) in hits.into_iter().enumerate() {
            if taken >= limit {
                break;
            }
            if n % 1024 == 0 {
                deadline.check()?;
            }
            let rec = decoders[bi].row(row)?;
            if let Some((line, labels)) = through_pipeline(log, &rec, stats) {
                streams.entry(labels).or_default().push((t, line));
                taken += 1;
            }
        }
    }
    stats.entries_returned = taken as u64;
    Ok(streams
        .into_iter()
        .map(|(labels, entries)| Stream { labels, entries })
        .collect())
}

/// The line of `rec` and its labels (stream labels and metadata) after the pipeline, or `None`
/// when the selector or a stage drops it; a selected line is counted as processed.
fn through_pipeline(
    log: &LogExpr,
    rec: &LogRecord,
    stats: &mut QueryStats,
) -> Option<(String, Labels)> {
    let ll = line_labels(rec);
    if !selector_matches(&log.selector, &ll.stream) {
        return None;
    }
    let line = body_text(rec);
    stats.lines_processed += 1;
    stats.bytes_processed += line.len() as u64;
    let mut labels = ll.merged();
    run_pipeline(&log.stages, &line, &mut labels).then_some((line, labels))
}

fn time_column(b: &arrow_array::RecordBatch) -> Result<&TimestampNanosecondArray> {
    b.column_by_name(col::TIME)
        .and_then(|c| c.as_any().downcast_ref::<TimestampNanosecondArray>())
        .ok_or_else(|| QueryError::Execution("log batch without time column".into()))
}

/// The labels a grouped range aggregation keys its lines by, when they can be looked up one by
/// one ([`label_value`]) instead of building every label of each line: grouping `by` names (or
/// none), and a pipeline of line filters and `drop`/`keep` only (no parser or label filter that
/// reads other labels). A name dropped, or not kept, by the pipeline is left out.
fn direct_key(stages: &[Stage], grouping: Option<&Grouping>) -> Option<Vec<String>> {
    let names = match grouping {
        None => Vec::new(),
        Some(Grouping::By(names)) => names.clone(),
        Some(Grouping::Without(_)) => return None,
    };
    let mut keep = names;
    for s in stages {
        match s {
            Stage::Line { .. } => {}
            Stage::Drop(dropped) => keep.retain(|n| !dropped.contains(n)),
            Stage::Keep(kept) => keep.retain(|n| kept.contains(n)),
            Stage::Json | Stage::Logfmt | Stage::LabelMatch(_) | Stage::LabelNum { .. } => {
                return None;
            }
        }
    }
    Some(keep)
}

/// The columns a grouped range aggregation on the direct path ([`direct_key`]) reads: time,
/// the columns of stream labels (the selector's), and the attribute maps and ids only when a
/// grouping name may be structured metadata, the body only for line filters and byte counts.
fn direct_columns(func: RangeFunc, stages: &[Stage], names: &[String]) -> Vec<&'static str> {
    let mut cols = vec![
        col::TIME,
        col::SEVERITY_NUMBER,
        col::SEVERITY_TEXT,
        col::SERVICE_NAME,
        col::RESOURCE_ATTRIBUTES,
    ];
    if !names.is_empty() {
        cols.push(col::ATTRIBUTES);
    }
    if names.iter().any(|n| n == "trace_id") {
        cols.push(col::TRACE_ID);
    }
    if names.iter().any(|n| n == "span_id") {
        cols.push(col::SPAN_ID);
    }
    let bytes = matches!(func, RangeFunc::BytesOverTime | RangeFunc::BytesRate);
    if bytes || stages.iter().any(|s| matches!(s, Stage::Line { .. })) {
        cols.push(col::BODY);
        cols.push(col::BODY_KIND);
    }
    cols
}

/// A metric expression with its range data loaded.
enum Prepared {
    Range {
        func: RangeFunc,
        range_ns: i64,
        /// Per series: sorted times and prefix sums of bytes (`bytes[i]` = bytes of the first
        /// `i` lines).
        series: Vec<(Labels, Vec<i64>, Vec<u64>)>,
    },
    Agg {
        op: AggOp,
        param: Option<f64>,
        grouping: Option<Grouping>,
        inner: Box<Prepared>,
    },
    Vector(f64),
    Number(f64),
    Binary {
        op: BinOp,
        lhs: Box<Prepared>,
        rhs: Box<Prepared>,
    },
}

/// Loads the range data of every leaf. Binary chains recurse through here once per operator,
/// so the loading lives in [`prepare_range`] and this frame stays small.
fn prepare(
    store: &Store,
    tenant: &TenantId,
    m: &MetricExpr,
    (start_ns, end_ns): (i64, i64),
    stats: &mut QueryStats,
    deadline: &Deadline,
) -> Result<Prepared> {
    let span = (start_ns, end_ns);
    Ok(match m {
        MetricExpr::Range {
            func,
            log,
            range_ns,
        } => prepare_range(
            store,
            tenant,
            (*func, log, *range_ns, None),
            span,
            stats,
            deadline,
        )?,
        MetricExpr::Agg {
            op,
            param,
            grouping,
            inner,
        } => {
            let inner = match (op, &**inner) {
                // `sum by (g) (count_over_time(...))` (Grafana's log volume): lines are grouped
                // by `g` as they are read, so a label set per line (trace ids as metadata)
                // never becomes a series of its own.
                (
                    AggOp::Sum,
                    MetricExpr::Range {
                        func,
                        log,
                        range_ns,
                    },
                ) if func.is_additive() => prepare_range(
                    store,
                    tenant,
                    (*func, log, *range_ns, Some(grouping.as_ref())),
                    span,
                    stats,
                    deadline,
                )?,
                _ => prepare(store, tenant, inner, span, stats, deadline)?,
            };
            Prepared::Agg {
                op: *op,
                param: *param,
                grouping: grouping.clone(),
                inner: Box::new(inner),
            }
        }
        MetricExpr::Vector(v) => Prepared::Vector(*v),
        MetricExpr::Number(v) => Prepared::Number(*v),
        MetricExpr::Binary { op, lhs, rhs } => Prepared::Binary {
            op: *op,
            lhs: Box::new(prepare(store, tenant, lhs, span, stats, deadline)?),
            rhs: Box::new(prepare(store, tenant, rhs, span, stats, deadline)?),
        },
    })
}

/// Loads one range aggregation `func(log [range_ns])` over `(start_ns, end_ns)`, one series
/// per label set, or per group of `group` when a sum by it follows (`Some(None)`: one group).
#[inline(never)]
fn prepare_range(
    store: &Store,
    tenant: &TenantId,
    (func, log, range_ns, group): (RangeFunc, &LogExpr, i64, Option<Option<&Grouping>>),
    (start_ns, end_ns): (i64, i64),
    stats: &mut QueryStats,
    deadline: &Deadline,
) -> Result<Prepared> {
    deadline.check()?;
    let from = start_ns.saturating_sub(range_ns).saturating_add(1);
    let direct = group.and_then(|g| direct_key(&log.stages, g));
    let mut request = scan_request(
        tenant,
        &log.selector,
        &log.stages,
        closed_range(from, end_ns),
    )
    .until(deadline.clone());
    if let Some(names) = &direct {
        request = request.project(&direct_columns(func, &log.stages, names));
    }
    let scan = store.scan(&request)?;
    stats.explain.add(&scan.stats);
    let mut by_series: BTreeMap<Labels, Vec<(i64, u64)>> = BTreeMap::new();
    for b in &scan.batches {
        deadline.check()?;
        let rows = LogRows::projected(b)?;
        for i in 0..b.num_rows() {
            let rec = rows.row(i)?;
            let (line, key) = match &direct {
                // Only the selector's and the grouping's labels are looked up.
                Some(names) => {
                    let selected = log.selector.iter().all(|m| {
                        m.matches(label_value(&rec, &m.key, true).as_deref().unwrap_or(""))
                    });
                    if !selected {
                        continue;
                    }
                    let line = body_text(&rec);
                    stats.lines_processed += 1;
                    stats.bytes_processed += line.len() as u64;
                    if !run_pipeline(&log.stages, &line, &mut Labels::new()) {
                        continue;
                    }
                    let key: Labels = names
                        .iter()
                        .filter_map(|n| label_value(&rec, n, false).map(|v| (n.clone(), v)))
                        .collect();
                    (line, key)
                }
                None => {
                    let Some((line, labels)) = through_pipeline(log, &rec, stats) else {
                        continue;
                    };
                    let key = match group {
                        Some(g) => group_key(&labels, g),
                        None => labels,
                    };
                    (line, key)
                }
            };
            by_series
                .entry(key)
                .or_default()
                .push((rec.time.0, line.len() as u64));
            if by_series.len() > MAX_SERIES {
                return Err(QueryError::Execution(format!(
                    "more than {MAX_SERIES} series; aggregate with sum by (...)"
                )));
            }
        }
    }
    let series = by_series
        .into_iter()
        .map(|(labels, mut pts)| {
            pts.sort_unstable();
            let times = pts.iter().map(|p| p.0).collect();
            let mut prefix = Vec::with_capacity(pts.len() + 1);
            let mut acc = 0u64;
            prefix.push(0);
            for p in &pts {
                acc += p.1;
                prefix.push(acc);
            }
            (labels, times, prefix)
        })
        .collect();
    Ok(Prepared::Range {
        func,
        range_ns,
        series,
    })
}

/// Evaluated value at one step: a number or a vector.
enum StepValue {
    Scalar(f64),
    Vector(Vec<(Labels, f64)>),
}

fn eval_at(p: &Prepared, t: i64) -> Result<Vec<(Labels, f64)>> {
    Ok(match eval_step(p, t)? {
        StepValue::Scalar(v) => vec![(Labels::new(), v)],
        StepValue::Vector(v) => v,
    })
}

/// One step of a prepared expression. Binary chains recurse through here once per operator,
/// so the leaves and the combining are separate functions and this frame stays small.
fn eval_step(p: &Prepared, t: i64) -> Result<StepValue> {
    Ok(match p {
        Prepared::Number(v) => StepValue::Scalar(*v),
        Prepared::Vector(v) => StepValue::Vector(vec![(Labels::new(), *v)]),
        Prepared::Range {
            func,
            range_ns,
            series,
        } => StepValue::Vector(range_step(*func, *range_ns, series, t)),
        Prepared::Agg {
            op,
            param,
            grouping,
            inner,
        } => {
            let input = eval_at(inner, t)?;
            StepValue::Vector(aggregate(*op, *param, grouping.as_ref(), input))
        }
        Prepared::Binary { op, lhs, rhs } => {
            let l = eval_step(lhs, t)?;
            let r = eval_step(rhs, t)?;
            combine(*op, l, r)
        }
    })
}

#[inline(never)]
fn range_step(
    func: RangeFunc,
    range_ns: i64,
    series: &[(Labels, Vec<i64>, Vec<u64>)],
    t: i64,
) -> Vec<(Labels, f64)> {
    let lo = t.saturating_sub(range_ns);
    let secs = range_ns as f64 / 1e9;
    let mut out = Vec::new();
    for (labels, times, prefix) in series {
        // Window (t - range, t].
        let a = times.partition_point(|&x| x <= lo);
        let b = times.partition_point(|&x| x <= t);
        if b <= a {
            continue;
        }
        let count = (b - a) as f64;
        let bytes = (prefix[b] - prefix[a]) as f64;
        let v = match func {
            RangeFunc::CountOverTime => count,
            RangeFunc::Rate => count / secs,
            RangeFunc::BytesOverTime => bytes,
            RangeFunc::BytesRate => bytes / secs,
        };
        out.push((labels.clone(), v));
    }
    out
}

#[inline(never)]
fn combine(op: BinOp, lhs: StepValue, rhs: StepValue) -> StepValue {
    let f = |a: f64, b: f64| match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul => a * b,
        BinOp::Div => a / b,
    };
    match (lhs, rhs) {
        (StepValue::Scalar(a), StepValue::Scalar(b)) => StepValue::Scalar(f(a, b)),
        (StepValue::Vector(v), StepValue::Scalar(b)) => {
            StepValue::Vector(v.into_iter().map(|(l, a)| (l, f(a, b))).collect())
        }
        (StepValue::Scalar(a), StepValue::Vector(v)) => {
            StepValue::Vector(v.into_iter().map(|(l, b)| (l, f(a, b))).collect())
        }
        (StepValue::Vector(l), StepValue::Vector(r)) => {
            let right: BTreeMap<&Labels, f64> = r.iter().map(|(l, v)| (l, *v)).collect();
            StepValue::Vector(
                l.iter()
                    .filter_map(|(labels, a)| {
                        right.get(labels).map(|b| (labels.clone(), f(*a, *b)))
                    })
                    .collect(),
            )
        }
    }
}

fn group_key(labels: &Labels, grouping: Option<&Grouping>) -> Labels {
    match grouping {
        None => Labels::new(),
        Some(Grouping::By(names)) => labels
            .iter()
            .filter(|(k, _)| names.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        Some(Grouping::Without(names)) => labels
            .iter()
            .filter(|(k, _)| !names.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }
}

fn aggregate(
    op: AggOp,
    param: Option<f64>,
    grouping: Option<&Grouping>,
    input: Vec<(Labels, f64)>,
) -> Vec<(Labels, f64)> {
    let mut groups: BTreeMap<Labels, Vec<(Labels, f64)>> = BTreeMap::new();
    for (labels, v) in input {
        groups
            .entry(group_key(&labels, grouping))
            .or_default()
            .push((labels, v));
    }
    let mut out = Vec::new();
    for (key, mut members) in groups {
        let vals = members.iter().map(|m| m.1);
        let n = members.len() as f64;
        let v = match op {
            AggOp::Sum => vals.sum(),
            AggOp::Count => n,
            AggOp::Min => vals.fold(f64::INFINITY, f64::min),
            AggOp::Max => vals.fold(f64::NEG_INFINITY, f64::max),
            AggOp::Avg => vals.sum::<f64>() / n,
            AggOp::Topk | AggOp::Bottomk => {
                let k = param.unwrap_or(1.0) as usize;
                members.sort_by(|a, b| {
                    let o = b.1.total_cmp(&a.1);
                    let o = if op == AggOp::Bottomk { o.reverse() } else { o };
                    o.then_with(|| a.0.cmp(&b.0))
                });
                members.truncate(k);
                out.extend(members);
                continue;
            }
        };
        out.push((key, v));
    }
    out
}

/// Distinct stream label sets of lines (helper for `/series`).
pub fn distinct_streams(lines: &[SelectedLine]) -> BTreeSet<&Labels> {
    lines.iter().map(|l| &l.labels.stream).collect()
}
