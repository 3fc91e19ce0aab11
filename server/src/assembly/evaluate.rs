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
//! hallucination index in its typed column, and the evidence attributes of
//! [`crate::otlp::genai::evidence`].

use std::collections::HashSet;

use sightline_detect::entropy::{UncertaintyOptions, response_uncertainty};
use sightline_detect::hallucination::{
    HallucinationOptions, RetrievedDocument, check_work, hallucination_index_parts,
};
use sightline_detect::logprobs::parse_logprobs;
use sightline_storage::{LogRecord, SpanId, SpanKind, SpanRecord};

use super::context::TraceContent;
use crate::otlp::genai::content::{has_documents, is_content_key};
use crate::otlp::genai::evidence::{ContextItem, Dimensions, evidence_attributes};
pub use crate::otlp::genai::evidence::{PROMPT_TEMPLATE_KEY, ROUTE_KEY, TARGET_KEY};
use crate::otlp::genai::{answer_text, logprobs_text};

/// Name of the spans the assembler writes.
pub const EVALUATION_SPAN: &str = "sightline.evaluation";
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
    e.attributes.extend(evidence_attributes(
        target.span_id,
        answer,
        &report,
        &ctx,
        dims,
    ));
    Some(e)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::assembly::test_spans::{s, span};
    use sightline_storage::AttrValue;

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
