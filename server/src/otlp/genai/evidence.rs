//! The evidence of a scored answer, as stored: the `sightline.evaluation.*` attributes that say
//! which passage of the answer's context supports each of its sentences.
//!
//! Two writers, one format: an answer span that carries its own documents is scored at ingest
//! and gets these attributes itself; any other answer is scored by the trace assembler, which
//! writes them on the answer's evaluation span (`crate::assembly::evaluate`). Readers
//! (provenance, the web UI) find both by `sightline.evaluation.name`.
//!
//! | attribute | value |
//! |---|---|
//! | `sightline.evaluation.name` | `hallucination_index` |
//! | `sightline.evaluation.target_span_id` | the answer's span id (hex) |
//! | `sightline.evaluation.label` | `low`, `medium` or `high` |
//! | `sightline.evaluation.explanation` | the index's explanation |
//! | `sightline.evaluation.documents` | ids of the retrieved documents in the context, in order |
//! | `sightline.evaluation.context` | ids of every context passage: documents, `tool:<name>`, `system_instructions` |
//! | `sightline.evaluation.source_span_ids` | the spans they came from (hex) |
//! | `sightline.evaluation.supporting_documents` | ids of the retrieved documents that support a sentence |
//! | `sightline.evaluation.supporting_context` | ids of every context passage that supports a sentence |
//! | `sightline.evaluation.unsupported_sentences` | sentences no passage supports |
//! | `sightline.evaluation.retrievals` | JSON: per retriever span, `span_id` and its `documents` (`id`, `score` or null, `used`: it supports a sentence) |
//! | `sightline.evaluation.route` | `app.route` / `http.route` of the answer's span or its nearest ancestor |
//! | `sightline.evaluation.prompt_template` | the prompt template's name ([`super::prompt::template_name`]) |
//! | `sightline.evaluation.evidence` | JSON: per answer sentence, its character span, `text`, `supported`, `missing` (its words or numbers the best passage lacks), and the best passage (`document_id`, `kind`, its character span, `text`, `coverage`, the retriever's `score`) |
//!
//! Texts in the evidence are cut to [`MAX_EVIDENCE_TEXT`] characters, `missing` to
//! [`MAX_MISSING_UNITS`] items, so one answer's evidence stays small.

use serde_json::json;
use sightline_detect::hallucination::{HallucinationReport, RetrievedDocument, RiskLabel};
use sightline_storage::{AttrValue, Attributes, SpanId};

use super::content::find;

/// `sightline.evaluation.name`: present on every span that holds evidence.
pub const NAME_KEY: &str = "sightline.evaluation.name";
/// The value of [`NAME_KEY`].
pub const HALLUCINATION_INDEX: &str = "hallucination_index";
/// The answer span the evidence is about.
pub const TARGET_KEY: &str = "sightline.evaluation.target_span_id";
/// The route of the answer.
pub const ROUTE_KEY: &str = "sightline.evaluation.route";
/// The prompt template of the answer.
pub const PROMPT_TEMPLATE_KEY: &str = "sightline.evaluation.prompt_template";
/// Prefix of every evidence attribute.
pub const PREFIX: &str = "sightline.evaluation.";
/// Most characters of a sentence's or a passage's text kept in the evidence.
pub const MAX_EVIDENCE_TEXT: usize = 500;
/// Most unsupported words or numbers listed per sentence.
pub const MAX_MISSING_UNITS: usize = 8;

/// What kind of context a passage came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContextKind {
    /// A retrieved document (chunk).
    Document,
    /// A tool's result.
    ToolResult,
    /// The LLM span's system instructions.
    SystemInstructions,
}

impl ContextKind {
    /// The name used in the evidence (`document`, `tool_result`, `system_instructions`).
    pub fn as_str(self) -> &'static str {
        match self {
            ContextKind::Document => "document",
            ContextKind::ToolResult => "tool_result",
            ContextKind::SystemInstructions => "system_instructions",
        }
    }
}

/// One passage of an answer's context.
#[derive(Clone, Debug)]
pub struct ContextItem {
    /// The passage (document id: the retriever's id, `tool:<name or call id>`, or
    /// `system_instructions`).
    pub doc: RetrievedDocument,
    /// What it is.
    pub kind: ContextKind,
    /// The span it came from.
    pub source: SpanId,
    /// The retriever's score (documents only, when given).
    pub score: Option<f64>,
}

/// What an evaluation is grouped by.
#[derive(Clone, Debug, Default)]
pub struct Dimensions {
    /// The route the answer was served on.
    pub route: Option<String>,
    /// The prompt template it was made from.
    pub prompt_template: Option<String>,
}

/// The route named by a span's own attributes (`app.route`, then `http.route`).
pub fn route_of(attrs: &Attributes) -> Option<String> {
    ["app.route", "http.route"]
        .into_iter()
        .find_map(|k| match find(attrs, k) {
            Some(AttrValue::Str(r)) if !r.is_empty() => Some(r.clone()),
            _ => None,
        })
}

/// `text[start..end]` (byte offsets, clamped to char boundaries) cut to [`MAX_EVIDENCE_TEXT`]
/// characters.
fn excerpt(text: &str, start: usize, end: usize) -> String {
    let end = end.min(text.len());
    let (Some(s), true) = (text.get(start..end), start <= end) else {
        return String::new();
    };
    s.chars().take(MAX_EVIDENCE_TEXT).collect()
}

fn strs(v: Vec<String>) -> AttrValue {
    AttrValue::Array(v.into_iter().map(AttrValue::Str).collect())
}

/// Pushes `v` unless present.
fn push_unique(out: &mut Vec<String>, v: &str) {
    if !out.iter().any(|x| x == v) {
        out.push(v.to_owned());
    }
}

/// The evidence attributes of `answer` (the span `target`'s) scored as `report` against `ctx`
/// (the documents in the order they were given to the scorer).
pub fn evidence_attributes(
    target: SpanId,
    answer: &str,
    report: &HallucinationReport,
    ctx: &[ContextItem],
    dims: Dimensions,
) -> Vec<(String, AttrValue)> {
    let mut supporting: Vec<String> = Vec::new();
    let mut supporting_context: Vec<String> = Vec::new();
    let mut unsupported = 0i64;
    let evidence: Vec<serde_json::Value> = report
        .grounding
        .sentences
        .iter()
        .map(|s| {
            if !s.supported && s.weight > 0.0 {
                unsupported += 1;
            }
            let item = s.best.as_ref().and_then(|b| ctx.get(b.document_index));
            if s.supported
                && let (Some(b), Some(item)) = (&s.best, item)
            {
                push_unique(&mut supporting_context, &b.document_id);
                if item.kind == ContextKind::Document {
                    push_unique(&mut supporting, &b.document_id);
                }
            }
            let missing: Vec<&String> =
                s.unsupported_units.iter().take(MAX_MISSING_UNITS).collect();
            json!({
                "sentence_index": s.sentence_index,
                "start_char": s.span.start_char,
                "end_char": s.span.end_char,
                "text": excerpt(answer, s.span.start_byte, s.span.end_byte),
                "supported": s.supported,
                "missing": missing,
                "best": s.best.as_ref().map(|b| json!({
                    "document_id": b.document_id,
                    "kind": item.map(|c| c.kind.as_str()),
                    "start_char": b.span.start_char,
                    "end_char": b.span.end_char,
                    "text": item.map(|c| excerpt(&c.doc.text, b.span.start_byte, b.span.end_byte)),
                    "coverage": b.coverage,
                    "score": item.and_then(|c| c.score),
                })),
            })
        })
        .collect();
    let mut source_ids: Vec<String> = Vec::new();
    for c in ctx {
        push_unique(&mut source_ids, &c.source.to_hex());
    }
    // Per retriever span: its documents, their scores, whether each supports a sentence.
    let mut retrievals: Vec<(SpanId, Vec<serde_json::Value>)> = Vec::new();
    for c in ctx.iter().filter(|c| c.kind == ContextKind::Document) {
        let doc = json!({
            "id": c.doc.id,
            "score": c.score,
            "used": supporting.contains(&c.doc.id),
        });
        match retrievals.iter_mut().find(|(s, _)| *s == c.source) {
            Some((_, d)) => d.push(doc),
            None => retrievals.push((c.source, vec![doc])),
        }
    }
    let retrievals: Vec<serde_json::Value> = retrievals
        .into_iter()
        .map(|(s, d)| json!({"span_id": s.to_hex(), "documents": d}))
        .collect();
    let ids_of = |kind: Option<ContextKind>| {
        ctx.iter()
            .filter(|c| kind.is_none_or(|k| c.kind == k))
            .map(|c| c.doc.id.clone())
            .collect::<Vec<_>>()
    };
    let label = match report.evaluation.score_label {
        RiskLabel::Low => "low",
        RiskLabel::Medium => "medium",
        RiskLabel::High => "high",
    };
    let mut ev = vec![
        (NAME_KEY, AttrValue::Str(HALLUCINATION_INDEX.into())),
        (TARGET_KEY, AttrValue::Str(target.to_hex())),
        ("sightline.evaluation.label", AttrValue::Str(label.into())),
        (
            "sightline.evaluation.explanation",
            AttrValue::Str(report.evaluation.explanation.clone()),
        ),
        (
            "sightline.evaluation.documents",
            strs(ids_of(Some(ContextKind::Document))),
        ),
        ("sightline.evaluation.context", strs(ids_of(None))),
        ("sightline.evaluation.source_span_ids", strs(source_ids)),
        (
            "sightline.evaluation.supporting_documents",
            strs(supporting),
        ),
        (
            "sightline.evaluation.supporting_context",
            strs(supporting_context),
        ),
        (
            "sightline.evaluation.unsupported_sentences",
            AttrValue::Int(unsupported),
        ),
        (
            "sightline.evaluation.retrievals",
            AttrValue::Str(serde_json::Value::Array(retrievals).to_string()),
        ),
        (
            "sightline.evaluation.evidence",
            AttrValue::Str(serde_json::Value::Array(evidence).to_string()),
        ),
    ];
    if let Some(r) = dims.route {
        ev.push((ROUTE_KEY, AttrValue::Str(r)));
    }
    if let Some(t) = dims.prompt_template {
        ev.push((PROMPT_TEMPLATE_KEY, AttrValue::Str(t)));
    }
    ev.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}
