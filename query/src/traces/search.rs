//! Span and trace search: push what storage can prune into the [`ScanRequest`] (time range,
//! string matchers on promoted columns and attributes, a projection), evaluate the other
//! conditions on the returned Arrow batches, then group the matching spans per trace.
//!
//! Ordering (documented in docs/traces.md): span search sorts matching spans by start time
//! (newest first) or duration (longest first), ties by trace id then span id. Trace search ranks
//! traces by their matched spans: `start` by the earliest matched span's start (newest first),
//! `duration` by the extent of the matched spans (`max end - min start`, longest first), ties by
//! trace id. A [`TraceCursor`] (the rank key and trace id of a page's last trace, as the answer's
//! `next_cursor`) continues a trace search after that trace. The summary of each returned trace (root service and name, start, duration) is read
//! from all of its spans with one trace-id lookup each.

use std::collections::HashMap;

use arrow_array::{
    Float64Array, Int64Array, RecordBatch, StringArray, TimestampNanosecondArray, UInt8Array,
};
use serde::Serialize;
use sightline_storage::schema::col;
use sightline_storage::{
    Deadline, ScanRequest, ScanStats, Signal, SpanId, StatusCode, Store, TenantId, TimeRange,
    TraceId,
};

use super::filter::{Cond, and_into, column, fixed_bytes};
use crate::error::{QueryError, Result};

/// Most matching spans one search may collect before it fails asking for a narrower query.
pub const MAX_MATCHED_SPANS: usize = 1_000_000;
/// Largest `limit` accepted.
pub const MAX_LIMIT: usize = 10_000;

/// Result order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SortBy {
    /// Newest first.
    #[default]
    Start,
    /// Longest first.
    Duration,
}

/// Where a page of trace search ended: the rank key (matched-span start, or extent for
/// `sort=duration`) and id of its last trace. Written as `<s|d>.<key>.<trace id hex>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceCursor {
    /// The order the key belongs to.
    pub sort: SortBy,
    /// The last trace's rank key, ns.
    pub key: i64,
    /// The last trace.
    pub trace: TraceId,
}

impl TraceCursor {
    /// Whether a trace ranked `(key, trace)` comes after the cursor (ranks are key descending,
    /// then trace id ascending).
    fn precedes(&self, key: i64, trace: &TraceId) -> bool {
        key < self.key || (key == self.key && *trace > self.trace)
    }

    /// Parses `<s|d>.<key>.<trace id hex>`.
    pub fn parse(s: &str) -> Result<Self> {
        let bad = || QueryError::BadRequest(format!("cursor: not a trace search cursor: {s:?}"));
        let mut parts = s.splitn(3, '.');
        let (Some(sort), Some(key), Some(trace)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        Ok(Self {
            sort: match sort {
                "s" => SortBy::Start,
                "d" => SortBy::Duration,
                _ => return Err(bad()),
            },
            key: key.parse().map_err(|_| bad())?,
            trace: TraceId::from_hex(trace).map_err(|_| bad())?,
        })
    }
}

impl std::fmt::Display for TraceCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sort = match self.sort {
            SortBy::Start => "s",
            SortBy::Duration => "d",
        };
        write!(f, "{sort}.{}.{}", self.key, self.trace.to_hex())
    }
}

/// A span or trace search.
#[derive(Clone, Debug)]
pub struct SpanQuery {
    /// Range on span start times.
    pub time: TimeRange,
    /// Conditions every matching span satisfies.
    pub conds: Vec<Cond>,
    /// Most results (spans or traces).
    pub limit: usize,
    /// Order.
    pub sort: SortBy,
    /// Trace search: most matched spans listed per trace (all are counted).
    pub spans_per_trace: usize,
    /// Trace search: only traces ranked after this one (the previous page's `next_cursor`).
    pub after: Option<TraceCursor>,
    /// When the search must stop ([`crate::QueryError::Timeout`]): the scans check it per
    /// row group and batch, the search per batch and per trace read.
    pub deadline: Deadline,
}

impl SpanQuery {
    /// A search over `time` with no conditions, limit 20, newest first, 3 spans per trace.
    pub fn new(time: TimeRange) -> Self {
        Self {
            time,
            conds: Vec::new(),
            limit: 20,
            sort: SortBy::Start,
            spans_per_trace: 3,
            after: None,
            deadline: Deadline::none(),
        }
    }

    /// Adds a condition.
    pub fn with(mut self, c: Cond) -> Self {
        self.conds.push(c);
        self
    }
}

/// One matching span (the promoted columns; attributes are read with the trace).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpanHit {
    /// Trace id.
    pub trace_id: TraceId,
    /// Span id.
    pub span_id: SpanId,
    /// Parent span id.
    pub parent_span_id: Option<SpanId>,
    /// `service.name`.
    pub service_name: String,
    /// Span name.
    pub name: String,
    /// Kind (`server`, `client`, ...).
    pub kind: &'static str,
    /// Start, ns since the epoch.
    pub start_unix_nano: i64,
    /// Duration, ns.
    pub duration_nano: i64,
    /// `unset`, `ok` or `error`.
    pub status: &'static str,
    /// `gen_ai.request.model`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `gen_ai.provider.name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// `gen_ai.operation.name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// `gen_ai.usage.input_tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<i64>,
    /// `gen_ai.usage.output_tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<i64>,
    /// `gen_ai.usage.cost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Mean token entropy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entropy_mean: Option<f64>,
    /// Max token entropy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entropy_max: Option<f64>,
    /// Hallucination index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hallucination_index: Option<f64>,
}

impl SpanHit {
    /// End time, ns.
    pub fn end_unix_nano(&self) -> i64 {
        self.start_unix_nano.saturating_add(self.duration_nano)
    }
}

/// Result of a span search.
#[derive(Clone, Debug, Serialize)]
pub struct SpanSearchResult {
    /// Matching spans, ordered, at most `limit`.
    pub spans: Vec<SpanHit>,
    /// Spans that matched before the limit.
    pub total_matched: usize,
    /// What the scan pruned and read.
    pub stats: ScanStats,
}

/// One trace of a trace search.
#[derive(Clone, Debug, Serialize)]
pub struct TraceHit {
    /// Trace id.
    pub trace_id: TraceId,
    /// Service of the root span (`""` when the trace has no root span).
    pub root_service_name: String,
    /// Name of the root span.
    pub root_span_name: String,
    /// Earliest span start of the whole trace, ns.
    pub start_unix_nano: i64,
    /// Latest span end minus earliest start over the whole trace, ns.
    pub duration_nano: i64,
    /// Spans of the trace.
    pub span_count: usize,
    /// Spans that matched the query.
    pub matched: usize,
    /// Totals over every span of the trace (LLM calls, tokens, cost, errors, worst quality).
    #[serde(flatten)]
    pub totals: TraceTotals,
    /// The first `spans_per_trace` matched spans, by start time.
    pub spans: Vec<SpanHit>,
}

/// What a whole trace adds up to: its LLM calls' tokens and cost (absent when no span
/// reports them), its error spans, and its worst hallucination index and highest mean token
/// entropy.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TraceTotals {
    /// Spans with status `error`.
    pub error_spans: usize,
    /// Spans with a GenAI operation.
    pub llm_calls: usize,
    /// Sum of `gen_ai.usage.input_tokens`.
    pub input_tokens: Option<i64>,
    /// Sum of `gen_ai.usage.output_tokens`.
    pub output_tokens: Option<i64>,
    /// Sum of `gen_ai.usage.cost`.
    pub cost: Option<f64>,
    /// Highest hallucination index of the trace's answers.
    pub max_hallucination_index: Option<f64>,
    /// Highest mean token entropy of the trace's answers.
    pub max_entropy_mean: Option<f64>,
}

impl TraceTotals {
    /// The totals of `spans` (every span of one trace).
    pub fn of(spans: &[SpanHit]) -> Self {
        fn sum<T: std::ops::Add<Output = T> + Copy>(v: impl Iterator<Item = T>) -> Option<T> {
            v.reduce(|a, b| a + b)
        }
        fn max(v: impl Iterator<Item = f64>) -> Option<f64> {
            v.filter(|x| x.is_finite()).reduce(f64::max)
        }
        Self {
            error_spans: spans.iter().filter(|s| s.status == "error").count(),
            llm_calls: spans.iter().filter(|s| s.operation.is_some()).count(),
            input_tokens: sum(spans.iter().filter_map(|s| s.input_tokens)),
            output_tokens: sum(spans.iter().filter_map(|s| s.output_tokens)),
            cost: sum(spans.iter().filter_map(|s| s.cost)),
            max_hallucination_index: max(spans.iter().filter_map(|s| s.hallucination_index)),
            max_entropy_mean: max(spans.iter().filter_map(|s| s.entropy_mean)),
        }
    }
}

/// Result of a trace search.
#[derive(Clone, Debug, Serialize)]
pub struct TraceSearchResult {
    /// Traces, ordered, at most `limit`.
    pub traces: Vec<TraceHit>,
    /// Traces with at least one matching span (over every page).
    pub total_traces: usize,
    /// Traces ranked after this page's last one (none: this page ends the results).
    pub remaining_traces: usize,
    /// The cursor of the next page, when traces remain.
    pub next_cursor: Option<String>,
    /// Matching spans over all traces.
    pub total_spans: usize,
    /// Scan statistics of the search scan plus the per-trace lookups.
    pub stats: ScanStats,
}

/// The columns a [`SpanHit`] is built from.
pub const HIT_COLUMNS: &[&str] = &[
    col::TRACE_ID,
    col::SPAN_ID,
    col::PARENT_SPAN_ID,
    col::SERVICE_NAME,
    col::SPAN_NAME,
    col::SPAN_KIND,
    col::START_TIME,
    col::DURATION,
    col::STATUS_CODE,
    col::GEN_AI_REQUEST_MODEL,
    col::GEN_AI_PROVIDER,
    col::GEN_AI_OPERATION,
    col::GEN_AI_INPUT_TOKENS,
    col::GEN_AI_OUTPUT_TOKENS,
    col::GEN_AI_COST,
    col::ENTROPY_MEAN,
    col::ENTROPY_MAX,
    col::HALLUCINATION_INDEX,
];

/// Scans the spans matching every condition and passes each matching batch with its mask to
/// `f`, until `deadline`. Returns the scan statistics.
pub(crate) fn scan_matching(
    store: &Store,
    tenant: &TenantId,
    (time, deadline): (TimeRange, &Deadline),
    conds: &[Cond],
    extra_columns: &[&str],
    mut f: impl FnMut(&RecordBatch, &[bool]) -> Result<()>,
) -> Result<ScanStats> {
    let mut req = ScanRequest::new(tenant.clone(), Signal::Spans, time).until(deadline.clone());
    let mut local: Vec<&Cond> = Vec::new();
    for c in conds {
        match c.pushdown() {
            Some(p) => req.predicates.push(p),
            None => local.push(c),
        }
    }
    let mut cols: Vec<&str> = extra_columns.to_vec();
    for c in &local {
        cols.extend(c.columns());
    }
    cols.sort_unstable();
    cols.dedup();
    req = req.project(&cols);
    let res = store.scan(&req)?;
    for b in &res.batches {
        deadline.check()?;
        let mut mask = vec![true; b.num_rows()];
        for c in &local {
            and_into(&mut mask, &c.eval(b)?);
        }
        f(b, &mask)?;
    }
    Ok(res.stats)
}

fn opt_str(a: &StringArray, i: usize) -> Option<String> {
    (!arrow_array::Array::is_null(a, i)).then(|| a.value(i).to_owned())
}
fn opt_i64(a: &Int64Array, i: usize) -> Option<i64> {
    (!arrow_array::Array::is_null(a, i)).then(|| a.value(i))
}
fn opt_f64(a: &Float64Array, i: usize) -> Option<f64> {
    (!arrow_array::Array::is_null(a, i)).then(|| a.value(i))
}

/// Builds the hits of the rows of `b` selected by `mask`.
pub(crate) fn hits(b: &RecordBatch, mask: &[bool], out: &mut Vec<SpanHit>) -> Result<()> {
    let trace = fixed_bytes(b, col::TRACE_ID)?;
    let span = fixed_bytes(b, col::SPAN_ID)?;
    let parent = fixed_bytes(b, col::PARENT_SPAN_ID)?;
    let service = column::<StringArray>(b, col::SERVICE_NAME)?;
    let name = column::<StringArray>(b, col::SPAN_NAME)?;
    let kind = column::<UInt8Array>(b, col::SPAN_KIND)?;
    let start = column::<TimestampNanosecondArray>(b, col::START_TIME)?;
    let dur = column::<Int64Array>(b, col::DURATION)?;
    let status = column::<UInt8Array>(b, col::STATUS_CODE)?;
    let model = column::<StringArray>(b, col::GEN_AI_REQUEST_MODEL)?;
    let provider = column::<StringArray>(b, col::GEN_AI_PROVIDER)?;
    let op = column::<StringArray>(b, col::GEN_AI_OPERATION)?;
    let tin = column::<Int64Array>(b, col::GEN_AI_INPUT_TOKENS)?;
    let tout = column::<Int64Array>(b, col::GEN_AI_OUTPUT_TOKENS)?;
    let cost = column::<Float64Array>(b, col::GEN_AI_COST)?;
    let emean = column::<Float64Array>(b, col::ENTROPY_MEAN)?;
    let emax = column::<Float64Array>(b, col::ENTROPY_MAX)?;
    let hall = column::<Float64Array>(b, col::HALLUCINATION_INDEX)?;
    for (i, keep) in mask.iter().enumerate() {
        if !keep {
            continue;
        }
        if out.len() >= MAX_MATCHED_SPANS {
            return Err(QueryError::Execution(format!(
                "more than {MAX_MATCHED_SPANS} spans match; narrow the time range or add conditions"
            )));
        }
        out.push(SpanHit {
            trace_id: TraceId::from_slice(trace.value(i))?,
            span_id: SpanId::from_slice(span.value(i))?,
            parent_span_id: if arrow_array::Array::is_null(parent, i) {
                None
            } else {
                Some(SpanId::from_slice(parent.value(i))?)
            },
            service_name: service.value(i).to_owned(),
            name: name.value(i).to_owned(),
            kind: sightline_storage::predicate::span_kind_name(kind.value(i)),
            start_unix_nano: start.value(i),
            duration_nano: dur.value(i),
            status: StatusCode::from_code(i32::from(status.value(i))).as_str(),
            model: opt_str(model, i),
            provider: opt_str(provider, i),
            operation: opt_str(op, i),
            input_tokens: opt_i64(tin, i),
            output_tokens: opt_i64(tout, i),
            cost: opt_f64(cost, i),
            entropy_mean: opt_f64(emean, i),
            entropy_max: opt_f64(emax, i),
            hallucination_index: opt_f64(hall, i),
        });
    }
    Ok(())
}

fn check(q: &SpanQuery) -> Result<()> {
    if q.limit == 0 || q.limit > MAX_LIMIT {
        return Err(QueryError::BadRequest(format!(
            "limit must be between 1 and {MAX_LIMIT}"
        )));
    }
    Ok(())
}

/// All spans matching the conditions, unordered.
pub fn matching_spans(
    store: &Store,
    tenant: &TenantId,
    q: &SpanQuery,
) -> Result<(Vec<SpanHit>, ScanStats)> {
    let mut out = Vec::new();
    let within = (q.time, &q.deadline);
    let stats = scan_matching(store, tenant, within, &q.conds, HIT_COLUMNS, |b, m| {
        hits(b, m, &mut out)
    })?;
    Ok((out, stats))
}

/// Orders spans as span search does.
pub fn sort_spans(spans: &mut [SpanHit], sort: SortBy) {
    spans.sort_by(|a, b| {
        let key = match sort {
            SortBy::Start => b.start_unix_nano.cmp(&a.start_unix_nano),
            SortBy::Duration => b.duration_nano.cmp(&a.duration_nano),
        };
        key.then(a.trace_id.cmp(&b.trace_id))
            .then(a.span_id.cmp(&b.span_id))
    });
}

/// Span search.
pub fn search_spans(store: &Store, tenant: &TenantId, q: &SpanQuery) -> Result<SpanSearchResult> {
    check(q)?;
    let (mut spans, stats) = matching_spans(store, tenant, q)?;
    let total_matched = spans.len();
    sort_spans(&mut spans, q.sort);
    spans.truncate(q.limit);
    Ok(SpanSearchResult {
        spans,
        total_matched,
        stats,
    })
}

/// Matched spans grouped per trace and ranked; `(rank key, trace, matched spans by start)`.
pub fn rank_traces(spans: Vec<SpanHit>, sort: SortBy) -> Vec<(i64, TraceId, Vec<SpanHit>)> {
    let mut by_trace: HashMap<TraceId, Vec<SpanHit>> = HashMap::new();
    for s in spans {
        by_trace.entry(s.trace_id).or_default().push(s);
    }
    let mut ranked: Vec<(i64, TraceId, Vec<SpanHit>)> = by_trace
        .into_iter()
        .map(|(t, mut v)| {
            v.sort_by(|a, b| {
                a.start_unix_nano
                    .cmp(&b.start_unix_nano)
                    .then(a.span_id.cmp(&b.span_id))
            });
            let min_start = v.iter().map(|s| s.start_unix_nano).min().unwrap_or(0);
            let max_end = v.iter().map(SpanHit::end_unix_nano).max().unwrap_or(0);
            let key = match sort {
                SortBy::Start => min_start,
                SortBy::Duration => max_end.saturating_sub(min_start),
            };
            (key, t, v)
        })
        .collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    ranked
}

/// Summary of a whole trace: root service and name, start, duration, span count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceSummary {
    /// Root span's service (`""` without a root).
    pub root_service_name: String,
    /// Root span's name.
    pub root_span_name: String,
    /// Earliest start.
    pub start_unix_nano: i64,
    /// Latest end minus earliest start.
    pub duration_nano: i64,
    /// Number of spans.
    pub span_count: usize,
}

/// Summarises spans of one trace. The root is the span without a parent (the earliest one
/// when several); without one, the earliest span whose parent is not in the trace.
pub fn summarize(spans: &[SpanHit]) -> TraceSummary {
    let ids: std::collections::HashSet<SpanId> = spans.iter().map(|s| s.span_id).collect();
    let pick = |pred: &dyn Fn(&SpanHit) -> bool| {
        spans.iter().filter(|s| pred(s)).min_by(|a, b| {
            a.start_unix_nano
                .cmp(&b.start_unix_nano)
                .then(a.span_id.cmp(&b.span_id))
        })
    };
    let root = pick(&|s| s.parent_span_id.is_none())
        .or_else(|| pick(&|s| s.parent_span_id.is_some_and(|p| !ids.contains(&p))));
    let start = spans.iter().map(|s| s.start_unix_nano).min().unwrap_or(0);
    let end = spans.iter().map(SpanHit::end_unix_nano).max().unwrap_or(0);
    TraceSummary {
        root_service_name: root.map(|r| r.service_name.clone()).unwrap_or_default(),
        root_span_name: root.map(|r| r.name.clone()).unwrap_or_default(),
        start_unix_nano: start,
        duration_nano: end.saturating_sub(start),
        span_count: spans.len(),
    }
}

/// Reads the hit columns of every span of one trace, until `deadline`.
pub fn trace_spans(
    store: &Store,
    tenant: &TenantId,
    trace: TraceId,
    deadline: &Deadline,
) -> Result<(Vec<SpanHit>, ScanStats)> {
    let req = ScanRequest::new(tenant.clone(), Signal::Spans, TimeRange::ALL)
        .with(sightline_storage::Predicate::TraceId(trace))
        .project(HIT_COLUMNS)
        .until(deadline.clone());
    let res = store.scan(&req)?;
    let mut out = Vec::new();
    for b in &res.batches {
        hits(b, &vec![true; b.num_rows()], &mut out)?;
    }
    Ok((out, res.stats))
}

/// Trace search.
pub fn search_traces(store: &Store, tenant: &TenantId, q: &SpanQuery) -> Result<TraceSearchResult> {
    check(q)?;
    if let Some(c) = &q.after
        && c.sort != q.sort
    {
        return Err(QueryError::BadRequest(
            "cursor: it belongs to a search with another sort".into(),
        ));
    }
    let (spans, mut stats) = matching_spans(store, tenant, q)?;
    let total_spans = spans.len();
    let mut ranked = rank_traces(spans, q.sort);
    let total_traces = ranked.len();
    if let Some(c) = &q.after {
        ranked.retain(|(key, t, _)| c.precedes(*key, t));
    }
    let remaining_traces = ranked.len().saturating_sub(q.limit);
    let next_cursor = ranked
        .get(q.limit.saturating_sub(1))
        .filter(|_| remaining_traces > 0)
        .map(|(key, trace, _)| {
            TraceCursor {
                sort: q.sort,
                key: *key,
                trace: *trace,
            }
            .to_string()
        });
    let mut traces = Vec::new();
    for (_, trace_id, matched) in ranked.into_iter().take(q.limit) {
        let (all, s) = trace_spans(store, tenant, trace_id, &q.deadline)?;
        stats.add(&s);
        let sum = summarize(&all);
        traces.push(TraceHit {
            trace_id,
            root_service_name: sum.root_service_name,
            root_span_name: sum.root_span_name,
            start_unix_nano: sum.start_unix_nano,
            duration_nano: sum.duration_nano,
            span_count: sum.span_count,
            matched: matched.len(),
            totals: TraceTotals::of(&all),
            spans: matched.into_iter().take(q.spans_per_trace).collect(),
        });
    }
    Ok(TraceSearchResult {
        traces,
        total_traces,
        remaining_traces,
        next_cursor,
        total_spans,
        stats,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_order_like_the_ranking() {
        let c = TraceCursor {
            sort: SortBy::Duration,
            key: -5,
            trace: TraceId([7; 16]),
        };
        assert_eq!(TraceCursor::parse(&c.to_string()).ok(), Some(c));
        for bad in [
            "",
            "s.1",
            "x.1.07070707070707070707070707070707",
            "s.a.07",
            "s.1.zz",
        ] {
            assert!(TraceCursor::parse(bad).is_err(), "{bad}");
        }
        // Key descending, then trace id ascending.
        assert!(c.precedes(-6, &TraceId([1; 16])));
        assert!(c.precedes(-5, &TraceId([8; 16])));
        assert!(!c.precedes(-5, &TraceId([7; 16])));
        assert!(!c.precedes(-4, &TraceId([9; 16])));
    }

    fn hit(n: u8, status: &'static str, llm: Option<(i64, i64, f64, f64)>) -> SpanHit {
        SpanHit {
            trace_id: TraceId([1; 16]),
            span_id: SpanId([n; 8]),
            parent_span_id: None,
            service_name: "s".into(),
            name: "op".into(),
            kind: "internal",
            start_unix_nano: i64::from(n),
            duration_nano: 1,
            status,
            model: llm.map(|_| "m".into()),
            provider: None,
            operation: llm.map(|_| "chat".into()),
            input_tokens: llm.map(|l| l.0),
            output_tokens: llm.map(|l| l.1),
            cost: llm.map(|l| l.2),
            entropy_mean: llm.map(|l| l.3),
            entropy_max: None,
            hallucination_index: llm.map(|l| l.3 / 10.0),
        }
    }

    #[test]
    fn totals_add_up_every_span_of_the_trace() {
        let spans = [
            hit(1, "ok", None),
            hit(2, "error", Some((100, 20, 0.5, 1.5))),
            hit(3, "unset", Some((10, 2, 0.25, 0.5))),
            hit(4, "error", None),
        ];
        let t = TraceTotals::of(&spans);
        assert_eq!(
            t,
            TraceTotals {
                error_spans: 2,
                llm_calls: 2,
                input_tokens: Some(110),
                output_tokens: Some(22),
                cost: Some(0.75),
                max_hallucination_index: Some(0.15),
                max_entropy_mean: Some(1.5),
            }
        );
        let none = TraceTotals::of(&spans[..1]);
        assert_eq!(
            (none.input_tokens, none.cost, none.max_hallucination_index),
            (None, None, None)
        );
    }
}
