//! OTLP spans to [`SpanRecord`]s.
//!
//! Per-span rejections (counted in `partial_success.rejected_spans`): trace id not 16 bytes or
//! all zeros; span id not 8 bytes or all zeros; parent span id neither empty nor 8 bytes (an
//! all-zero parent means "root"); start time zero or more than `max_future_skew_secs` ahead;
//! end time before the start; any attribute list (resource, scope, span, event, link) over a
//! limit. A resource or scope over a limit rejects all of its spans. Event times of zero take
//! the span's start time. LLM content over `max_content_bytes_per_span` is truncated, not
//! rejected (see [`super::attributes`]).

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::Span;
use sightline_storage::{
    AttrValue, SpanEvent, SpanId, SpanKind, SpanLink, SpanRecord, StatusCode, TraceId, UnixNanos,
};

use super::attributes::{
    ContentBudget, TRUNCATED_KEY, check_scope_attributes, convert_attributes, convert_resource,
    convert_span_attributes,
};
use super::genai::evidence::PREFIX as EVIDENCE_PREFIX;
use super::genai::{QualityOutcome, promote, quality};
use super::{ItemError, MapContext, Mapped, RejectReason};

/// Counters of the LLM content handling (truncation, quality computation) over one request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QualityCounts {
    /// Spans with logprobs.
    pub logprobs: u64,
    /// Of those, ones that could not be scored.
    pub logprobs_errors: u64,
    /// Spans with a hallucination index.
    pub hallucination: u64,
    /// Spans whose LLM content was truncated (`max_content_bytes_per_span`).
    pub truncated: u64,
}

impl QualityCounts {
    fn add(&mut self, o: &QualityOutcome) {
        self.logprobs += u64::from(o.logprobs_found);
        self.logprobs_errors += u64::from(o.logprobs_error.is_some());
        self.hallucination += u64::from(o.hallucination_scored);
    }
}

/// Number of spans in a request.
pub fn count_spans(req: &ExportTraceServiceRequest) -> usize {
    req.resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .map(|s| s.spans.len())
        .sum()
}

fn trace_id(bytes: &[u8]) -> Result<TraceId, ItemError> {
    TraceId::from_slice(bytes).map_err(|e| ItemError::new(RejectReason::InvalidId, e.to_string()))
}

fn span_id(bytes: &[u8], what: &str) -> Result<SpanId, ItemError> {
    SpanId::from_slice(bytes)
        .map_err(|e| ItemError::new(RejectReason::InvalidId, format!("{what}: {e}")))
}

fn parent_id(bytes: &[u8]) -> Result<Option<SpanId>, ItemError> {
    if bytes.is_empty() || (bytes.len() == SpanId::LEN && bytes.iter().all(|b| *b == 0)) {
        return Ok(None);
    }
    span_id(bytes, "parent span id").map(Some)
}

fn map_span(
    s: &Span,
    ctx: &MapContext,
    counts: &mut QualityCounts,
) -> Result<SpanRecord, ItemError> {
    let trace = trace_id(&s.trace_id)?;
    let id = span_id(&s.span_id, "span id")?;
    let parent = parent_id(&s.parent_span_id)?;
    let start = ctx.timestamp("start_time_unix_nano", s.start_time_unix_nano)?;
    let end = UnixNanos::from_otlp(s.end_time_unix_nano)
        .map_err(|e| ItemError::new(RejectReason::InvalidTimestamp, e.to_string()))?;
    if end < start {
        return Err(ItemError::new(
            RejectReason::InvalidTimestamp,
            format!(
                "end_time_unix_nano {} is before start_time_unix_nano {}",
                s.end_time_unix_nano, s.start_time_unix_nano
            ),
        ));
    }
    let limits = &ctx.limits;
    let mut content = ContentBudget::new(limits.max_content_bytes_per_span);
    let mut attributes = convert_span_attributes(&s.attributes, limits, &mut content)?;
    if s.events.len() > limits.max_attributes_per_item {
        return Err(ItemError::new(
            RejectReason::TooManyAttributes,
            format!(
                "{} events, over the limit of {}",
                s.events.len(),
                limits.max_attributes_per_item
            ),
        ));
    }
    if s.links.len() > limits.max_attributes_per_item {
        return Err(ItemError::new(
            RejectReason::TooManyAttributes,
            format!(
                "{} links, over the limit of {}",
                s.links.len(),
                limits.max_attributes_per_item
            ),
        ));
    }
    let mut events = Vec::with_capacity(s.events.len());
    for e in &s.events {
        let time = if e.time_unix_nano == 0 {
            start
        } else {
            ctx.timestamp("event time_unix_nano", e.time_unix_nano)?
        };
        events.push(SpanEvent {
            time,
            name: e.name.clone(),
            attributes: convert_span_attributes(&e.attributes, limits, &mut content)?,
        });
    }
    let mut links = Vec::with_capacity(s.links.len());
    for l in &s.links {
        links.push(SpanLink {
            trace_id: trace_id(&l.trace_id)?,
            span_id: span_id(&l.span_id, "link span id")?,
            trace_state: l.trace_state.clone(),
            attributes: convert_attributes(&l.attributes, limits)?,
        });
    }
    if !content.truncated.is_empty() {
        counts.truncated += 1;
        let keys = std::mem::take(&mut content.truncated);
        attributes.push((
            TRUNCATED_KEY.to_owned(),
            AttrValue::Array(keys.into_iter().map(AttrValue::Str).collect()),
        ));
    }
    let gen_ai = promote(&mut attributes);
    let (quality, outcome, evidence) = quality(id, &attributes, &events);
    if !evidence.is_empty() {
        // The span's own evidence replaces any it was sent with.
        attributes.retain(|(k, _)| !k.starts_with(EVIDENCE_PREFIX));
        attributes.extend(evidence);
    }
    counts.add(&outcome);
    let status = s.status.as_ref();
    let mut rec = SpanRecord::new(trace, id, String::new(), s.name.clone(), start, end);
    rec.parent_span_id = parent;
    rec.trace_state = s.trace_state.clone();
    rec.flags = s.flags;
    rec.kind = SpanKind::from_code(s.kind);
    rec.status_code = StatusCode::from_code(status.map_or(0, |st| st.code));
    rec.status_message = status.map(|st| st.message.clone()).unwrap_or_default();
    rec.gen_ai = gen_ai;
    rec.quality = quality;
    rec.attributes = attributes;
    rec.events = events;
    rec.links = links;
    Ok(rec)
}

/// Maps a request's spans; rejected spans are counted, not returned.
pub fn map_traces(
    req: &ExportTraceServiceRequest,
    ctx: &MapContext,
) -> (Mapped<Vec<SpanRecord>>, QualityCounts) {
    let mut out = Mapped::<Vec<SpanRecord>> {
        rows: Vec::with_capacity(count_spans(req)),
        ..Mapped::default()
    };
    let mut counts = QualityCounts::default();
    for rs in &req.resource_spans {
        let resource = match convert_resource(rs.resource.as_ref(), &ctx.limits) {
            Ok(r) => r,
            Err(e) => {
                for _ in rs.scope_spans.iter().flat_map(|s| &s.spans) {
                    out.reject(ItemError::new(e.reason, format!("resource: {}", e.message)));
                }
                continue;
            }
        };
        for ss in &rs.scope_spans {
            let scope = ss.scope.as_ref();
            if let Some(Err(e)) =
                scope.map(|sc| check_scope_attributes(&sc.attributes, &ctx.limits))
            {
                for _ in &ss.spans {
                    out.reject(ItemError::new(e.reason, format!("scope: {}", e.message)));
                }
                continue;
            }
            for span in &ss.spans {
                match map_span(span, ctx, &mut counts) {
                    Ok(mut rec) => {
                        rec.service_name.clone_from(&resource.service_name);
                        rec.resource_attributes.clone_from(&resource.attributes);
                        if let Some(sc) = scope {
                            rec.scope_name.clone_from(&sc.name);
                            rec.scope_version.clone_from(&sc.version);
                        }
                        out.accepted += 1;
                        out.rows.push(rec);
                    }
                    Err(e) => out.reject(e),
                }
            }
        }
    }
    out.truncated = counts.truncated;
    (out, counts)
}
