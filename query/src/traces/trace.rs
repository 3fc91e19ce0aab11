//! One trace by id: all of its spans decoded, its root, orphans and critical path.

use std::collections::HashSet;

use serde::Serialize;
use sightline_storage::{
    Deadline, Predicate, ScanRequest, ScanStats, Signal, SpanId, SpanRecord, Store, TenantId,
    TimeRange, TraceId,
};

use super::critical_path::{PathSegment, PathSpan, choose_root, critical_path};
use crate::error::Result;

/// A trace with the structure computed over its spans.
#[derive(Clone, Debug, Serialize)]
pub struct TraceView {
    /// The trace id.
    pub trace_id: TraceId,
    /// Every span, by start time (then span id).
    pub spans: Vec<SpanRecord>,
    /// The root the critical path starts from (see [`super::critical_path`]).
    pub root: Option<SpanId>,
    /// Spans whose parent is not in the trace.
    pub orphans: Vec<SpanId>,
    /// Critical path segments, chronological.
    pub critical_path: Vec<PathSegment>,
    /// How the lookup was pruned.
    pub stats: ScanStats,
}

impl TraceView {
    /// Builds the view of already-read spans.
    pub fn new(trace_id: TraceId, mut spans: Vec<SpanRecord>, stats: ScanStats) -> Self {
        spans.sort_by(|a, b| a.start.cmp(&b.start).then(a.span_id.cmp(&b.span_id)));
        let path_spans: Vec<PathSpan> = spans
            .iter()
            .map(|s| PathSpan {
                span_id: s.span_id,
                parent: s.parent_span_id,
                start: s.start.0,
                end: s.end.0.max(s.start.0),
            })
            .collect();
        let ids: HashSet<SpanId> = spans.iter().map(|s| s.span_id).collect();
        let orphans = spans
            .iter()
            .filter(|s| s.parent_span_id.is_some_and(|p| !ids.contains(&p)))
            .map(|s| s.span_id)
            .collect();
        let root = choose_root(&path_spans).map(|i| path_spans[i].span_id);
        let critical_path = critical_path(&path_spans);
        Self {
            trace_id,
            spans,
            root,
            orphans,
            critical_path,
            stats,
        }
    }
}

/// Reads one trace of `tenant`, until `deadline`; `None` when no span of it is stored.
pub fn trace_by_id(
    store: &Store,
    tenant: &TenantId,
    trace_id: TraceId,
    deadline: &Deadline,
) -> Result<Option<TraceView>> {
    let req = ScanRequest::new(tenant.clone(), Signal::Spans, TimeRange::ALL)
        .with(Predicate::TraceId(trace_id))
        .until(deadline.clone());
    let res = store.scan(&req)?;
    let mut spans = Vec::new();
    for b in &res.batches {
        deadline.check()?;
        spans.extend(sightline_storage::columnar::spans_from_batch(b)?);
    }
    if spans.is_empty() {
        return Ok(None);
    }
    Ok(Some(TraceView::new(trace_id, spans, res.stats)))
}
