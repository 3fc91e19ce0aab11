//! One trace's LLM spans scored against the context their trace gave them
//! ([`super::context`]: retrieved documents, tool results, system instructions): the evaluation
//! spans the assembler stores.
//!
//! An LLM span `L` is a span with an answer (on the span, in its events or in the GenAI log
//! records correlated to it). An `L` that carries documents itself is scored at ingest and
//! skipped here.
//!
//! Each scored `L` gets one evaluation span: a child of `L`, named [`EVALUATION_SPAN`], with
//! a span id derived from `L`'s (so a trace evaluated twice writes the same id), `L`'s service,
//! resource, GenAI dimensions (operation, provider, models, conversation; no token usage, so
//! sums over spans do not count a call twice) and small attributes (`app.route`, ...), the
//! hallucination index in its typed column, and the evidence as attributes:
//!
//! | attribute | value |
//! |---|---|
//! | `sightline.evaluation.name` | `hallucination_index` |
//! | `sightline.evaluation.target_span_id` | `L`'s span id (hex) |
//! | `sightline.evaluation.label` | `low`, `medium` or `high` |
//! | `sightline.evaluation.explanation` | the index's explanation |
//! | `sightline.evaluation.documents` | ids of the retrieved documents in the context, in order |
//! | `sightline.evaluation.context` | ids of every context passage: documents, `tool:<name>`, `system_instructions` |
//! | `sightline.evaluation.source_span_ids` | the spans they came from (hex) |
//! | `sightline.evaluation.supporting_documents` | ids of the retrieved documents that support a sentence |
//! | `sightline.evaluation.supporting_context` | ids of every context passage that supports a sentence |
//! | `sightline.evaluation.unsupported_sentences` | sentences no passage supports |
//! | `sightline.evaluation.retrievals` | JSON: per retriever span, `span_id` and its `documents` (`id`, `score` or null, `used`: it supports a sentence) |
//! | `sightline.evaluation.route` | `app.route` / `http.route` of `L` or its nearest ancestor |
//! | `sightline.evaluation.prompt_template` | the prompt template's name ([`super::context::template_name`]) |
//! | `sightline.evaluation.evidence` | JSON: per answer sentence, its character span, `supported`, and the best passage (`document_id`, `kind`, its character span, `coverage`, the retriever's `score`) |

use std::collections::HashSet;

use serde_json::json;
use sightline_detect::entropy::{UncertaintyOptions, response_uncertainty};
use sightline_detect::hallucination::{
    HallucinationOptions, RetrievedDocument, RiskLabel, check_work, hallucination_index_parts,
};
use sightline_detect::logprobs::parse_logprobs;
use sightline_storage::{AttrValue, LogRecord, SpanId, SpanKind, SpanRecord};

use super::context::{ContextItem, ContextKind, TraceContent};
use crate::otlp::genai::content::{has_documents, is_content_key};
use crate::otlp::genai::{answer_text, logprobs_text};

/// Name of the spans the assembler writes.
pub const EVALUATION_SPAN: &str = "sightline.evaluation";
/// Attribute of an evaluation span naming the span it scores.
pub const TARGET_KEY: &str = "sightline.evaluation.target_span_id";
/// Attribute of an evaluation span naming the route of the answer.
pub const ROUTE_KEY: &str = "sightline.evaluation.route";
/// Attribute of an evaluation span naming the prompt template of the answer.
pub const PROMPT_TEMPLATE_KEY: &str = "sightline.evaluation.prompt_template";
/// Attributes of the scored span copied to its evaluation only when their rendered value is
/// at most this long (content attributes are never copied).
const MAX_COPIED_ATTRIBUTE: usize = 256;

/// The span id of `target`'s evaluation: a hash of its id, never zero.
pub fn evaluation_span_id(target: SpanId) -> SpanId {
    let h = xxhash_rust::xxh3::xxh3_64_with_seed(target.as_bytes(), 0x5e_1a_11_e0);
    SpanId(h.max(1).to_be_bytes())
}

/// Scores every LLM span of one trace that has an answer and context and no evaluation yet;
/// returns the evaluation spans to store. `logs` are the trace's log records (GenAI events
/// among them count as events of their span).
pub fn evaluate_trace(spans: &[SpanRecord], logs: &[LogRecord]) -> Vec<SpanRecord> {
    let trace = TraceContent::new(spans, logs);
    let evaluated: HashSet<SpanId> = spans
        .iter()
        .filter(|s| s.name == EVALUATION_SPAN)
        .map(|s| s.span_id)
        .collect();
    let mut out = Vec::new();
    for target in spans {
        if target.name == EVALUATION_SPAN
            || target.quality.hallucination_index.is_some()
            || has_documents(&target.attributes)
            || evaluated.contains(&evaluation_span_id(target.span_id))
        {
            continue;
        }
        let events = trace.events_of(target);
        let Some(answer) = answer_text(&target.attributes, &events) else {
            continue;
        };
        let ctx = trace.context(target, &events);
        if ctx.is_empty() {
            continue;
        }
        let dims = Dimensions {
            route: trace.route(target),
            prompt_template: trace.prompt_template(target),
        };
        if let Some(e) = evaluate(target, &events, &answer, ctx, dims) {
            out.push(e);
        }
    }
    out
}

/// What an evaluation is grouped by, read from the trace.
struct Dimensions {
    route: Option<String>,
    prompt_template: Option<String>,
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

fn evaluate(
    target: &SpanRecord,
    events: &[sightline_storage::SpanEvent],
    answer: &str,
    ctx: Vec<ContextItem>,
    dims: Dimensions,
) -> Option<SpanRecord> {
    let docs: Vec<RetrievedDocument> = ctx.iter().map(|c| c.doc.clone()).collect();
    // The same work bound as the detect API: larger pairs are not scored.
    check_work(answer, &docs).ok()?;
    let uncertainty = logprobs_text(&target.attributes, events)
        .and_then(|t| parse_logprobs(&t).ok())
        .and_then(|lp| response_uncertainty(&lp, &UncertaintyOptions::default()).ok())
        .filter(|u| u.tokens > 0);
    let report =
        hallucination_index_parts(answer, &docs, uncertainty, &HallucinationOptions::default())
            .ok()?;
    let mut e = SpanRecord::new(
        target.trace_id,
        evaluation_span_id(target.span_id),
        target.service_name.clone(),
        EVALUATION_SPAN,
        target.end,
        target.end,
    );
    e.parent_span_id = Some(target.span_id);
    e.kind = SpanKind::Internal;
    e.scope_name = "sightline".into();
    e.scope_version = env!("CARGO_PKG_VERSION").into();
    e.resource_attributes
        .clone_from(&target.resource_attributes);
    let g = &target.gen_ai;
    e.gen_ai.operation_name.clone_from(&g.operation_name);
    e.gen_ai.provider_name.clone_from(&g.provider_name);
    e.gen_ai.request_model.clone_from(&g.request_model);
    e.gen_ai.response_model.clone_from(&g.response_model);
    e.gen_ai.conversation_id.clone_from(&g.conversation_id);
    e.quality.hallucination_index = Some(report.evaluation.score_value);
    e.attributes = target
        .attributes
        .iter()
        .filter(|(k, v)| {
            !is_content_key(k)
                && !k.starts_with("input.")
                && !k.starts_with("output.")
                && !k.starts_with("sightline.evaluation.")
                && v.render().len() <= MAX_COPIED_ATTRIBUTE
        })
        .cloned()
        .collect();
    let item_of = |id: &str| ctx.iter().find(|c| c.doc.id == id);
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
            let item = s.best.as_ref().and_then(|b| item_of(&b.document_id));
            if s.supported
                && let Some(b) = &s.best
            {
                push_unique(&mut supporting_context, &b.document_id);
                if item.is_some_and(|c| c.kind == ContextKind::Document) {
                    push_unique(&mut supporting, &b.document_id);
                }
            }
            json!({
                "sentence_index": s.sentence_index,
                "start_char": s.span.start_char,
                "end_char": s.span.end_char,
                "supported": s.supported,
                "best": s.best.as_ref().map(|b| json!({
                    "document_id": b.document_id,
                    "kind": item.map(|c| c.kind.as_str()),
                    "start_char": b.span.start_char,
                    "end_char": b.span.end_char,
                    "coverage": b.coverage,
                    "score": item.and_then(|c| c.score),
                })),
            })
        })
        .collect();
    let mut source_ids: Vec<String> = Vec::new();
    for c in &ctx {
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
        (
            "sightline.evaluation.name",
            AttrValue::Str("hallucination_index".into()),
        ),
        (TARGET_KEY, AttrValue::Str(target.span_id.to_hex())),
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
    e.attributes
        .extend(ev.into_iter().map(|(k, v)| (k.to_owned(), v)));
    Some(e)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::assembly::test_spans::{s, span};

    fn retriever(id: u8, parent: Option<u8>, start: i64) -> SpanRecord {
        span(
            id,
            parent,
            start,
            vec![
                ("openinference.span.kind", s("RETRIEVER")),
                (
                    "retrieval.documents.0.document.content",
                    s("The Eiffel Tower is 330 metres tall and stands in Paris."),
                ),
                ("retrieval.documents.0.document.id", s("eiffel")),
                (
                    "retrieval.documents.0.document.score",
                    AttrValue::Double(0.91),
                ),
                (
                    "retrieval.documents.1.document.content",
                    s("The Louvre is the most visited museum in the world."),
                ),
                ("retrieval.documents.1.document.id", s("louvre")),
            ],
        )
    }

    fn llm(id: u8, parent: Option<u8>, start: i64, answer: &str) -> SpanRecord {
        let mut r = span(
            id,
            parent,
            start,
            vec![
                ("openinference.span.kind", s("LLM")),
                ("llm.output_messages.0.message.content", s(answer)),
                ("app.route", s("/ask")),
                ("input.value", s("a long prompt")),
            ],
        );
        r.gen_ai.request_model = Some("gpt-4o".into());
        r.gen_ai.input_tokens = Some(42);
        r
    }

    fn attr<'a>(e: &'a SpanRecord, key: &str) -> &'a AttrValue {
        &e.attributes.iter().find(|(k, _)| k == key).unwrap().1
    }

    #[test]
    fn a_retriever_under_a_sibling_chain_is_the_llm_spans_context() {
        // request (1) -> chain (2) -> retriever (3); request -> chat (4), as LangChain's
        // retriever and the openai SDK's chat span sit under one request span.
        let grounded = "The Eiffel Tower is 330 metres tall. It stands in Paris.";
        let wrong = "The Eiffel Tower is 912 metres tall. Napoleon built it in Berlin.";
        let base = vec![
            span(1, None, 0, vec![]),
            span(2, Some(1), 1, vec![]),
            retriever(3, Some(2), 2),
        ];
        let mut good = base.clone();
        good.push(llm(4, Some(1), 5, grounded));
        let mut bad = base;
        bad.push(llm(4, Some(1), 5, wrong));
        let g = evaluate_trace(&good, &[]);
        let b = evaluate_trace(&bad, &[]);
        assert_eq!((g.len(), b.len()), (1, 1));
        let (g, b) = (&g[0], &b[0]);
        assert_eq!(g.parent_span_id, Some(SpanId([4; 8])));
        assert_eq!(g.span_id, evaluation_span_id(SpanId([4; 8])));
        assert_eq!(g.name, EVALUATION_SPAN);
        let (hg, hb) = (
            g.quality.hallucination_index.unwrap(),
            b.quality.hallucination_index.unwrap(),
        );
        assert!(hg < hb, "grounded {hg} vs contradicting {hb}");
        assert_eq!(
            attr(g, "sightline.evaluation.documents"),
            &AttrValue::Array(vec![s("eiffel"), s("louvre")])
        );
        assert_eq!(
            attr(g, "sightline.evaluation.supporting_documents"),
            &AttrValue::Array(vec![s("eiffel")])
        );
        assert_eq!(
            attr(g, "sightline.evaluation.unsupported_sentences"),
            &AttrValue::Int(0)
        );
        assert!(
            matches!(attr(b, "sightline.evaluation.unsupported_sentences"), AttrValue::Int(n) if *n > 0)
        );
        let AttrValue::Str(ev) = attr(g, "sightline.evaluation.evidence") else {
            panic!()
        };
        let ev: serde_json::Value = serde_json::from_str(ev).unwrap();
        assert_eq!(ev[0]["best"]["document_id"], "eiffel");
        assert_eq!(ev[0]["best"]["kind"], "document");
        assert_eq!(ev[0]["best"]["score"], 0.91);
        // Per retrieval: the retriever's documents, their scores and which were used.
        let AttrValue::Str(r) = attr(g, "sightline.evaluation.retrievals") else {
            panic!()
        };
        let r: serde_json::Value = serde_json::from_str(r).unwrap();
        assert_eq!(
            r,
            serde_json::json!([{"span_id": SpanId([3; 8]).to_hex(), "documents": [
                {"id": "eiffel", "score": 0.91, "used": true},
                {"id": "louvre", "score": null, "used": false},
            ]}])
        );
        assert_eq!(attr(g, ROUTE_KEY), &s("/ask"));
        // Dimensions and small attributes are copied, usage and content are not.
        assert_eq!(g.gen_ai.request_model.as_deref(), Some("gpt-4o"));
        assert_eq!(g.gen_ai.input_tokens, None);
        assert_eq!(attr(g, "app.route"), &s("/ask"));
        assert!(!g.attributes.iter().any(|(k, _)| k == "input.value"));
        // Evaluated once: with its evaluation in the trace, nothing more is written.
        let mut again = good.clone();
        again.push(g.clone());
        assert!(evaluate_trace(&again, &[]).is_empty());
    }

    #[test]
    fn later_and_descendant_documents_are_not_context() {
        let answer = "The Eiffel Tower is 330 metres tall.";
        // A retriever that starts after the LLM span, and one under the LLM span.
        let spans = vec![
            span(1, None, 0, vec![]),
            llm(4, Some(1), 5, answer),
            retriever(3, Some(1), 9),
            retriever(5, Some(4), 3),
        ];
        assert!(evaluate_trace(&spans, &[]).is_empty());
        // No answer, no evaluation.
        let spans = vec![retriever(3, None, 0), span(4, None, 5, vec![])];
        assert!(evaluate_trace(&spans, &[]).is_empty());
    }
}
