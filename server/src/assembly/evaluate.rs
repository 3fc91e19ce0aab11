//! One trace's LLM spans scored against the documents the trace retrieved before them: the
//! evaluation spans the assembler stores.
//!
//! The context of an LLM span `L` (a span with an answer) is the documents of every other span
//! of the trace that started no later than `L` and is not one of `L`'s descendants: its
//! ancestors, its earlier siblings and what they contain (a LangChain retriever under a chain
//! span, next to the SDK's chat span). An `L` that carries documents itself is scored at
//! ingest and skipped here.
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
//! | `sightline.evaluation.documents` | ids of the context documents, in order |
//! | `sightline.evaluation.source_span_ids` | the spans they came from (hex) |
//! | `sightline.evaluation.supporting_documents` | ids of the documents that support a sentence |
//! | `sightline.evaluation.unsupported_sentences` | sentences no document supports |
//! | `sightline.evaluation.evidence` | JSON: per answer sentence, its character span, `supported`, and the best passage (`document_id`, its character span, `coverage`) |

use std::collections::{HashMap, HashSet};

use serde_json::json;
use sightline_detect::entropy::{UncertaintyOptions, response_uncertainty};
use sightline_detect::hallucination::{
    HallucinationOptions, RetrievedDocument, RiskLabel, check_work, hallucination_index_parts,
};
use sightline_detect::logprobs::parse_logprobs;
use sightline_storage::{AttrValue, SpanId, SpanKind, SpanRecord};

use crate::otlp::genai::content::{has_documents, is_content_key};
use crate::otlp::genai::{answer_text, documents, logprobs_text};

/// Name of the spans the assembler writes.
pub const EVALUATION_SPAN: &str = "sightline.evaluation";
/// Attribute of an evaluation span naming the span it scores.
pub const TARGET_KEY: &str = "sightline.evaluation.target_span_id";
/// Attributes of the scored span copied to its evaluation only when their rendered value is
/// at most this long (content attributes are never copied).
const MAX_COPIED_ATTRIBUTE: usize = 256;

/// The span id of `target`'s evaluation: a hash of its id, never zero.
pub fn evaluation_span_id(target: SpanId) -> SpanId {
    let h = xxhash_rust::xxh3::xxh3_64_with_seed(target.as_bytes(), 0x5e_1a_11_e0);
    SpanId(h.max(1).to_be_bytes())
}

/// The trace's context documents for `target` (see the module docs), with the span each came
/// from.
fn context(spans: &[SpanRecord], target: &SpanRecord) -> Vec<(RetrievedDocument, SpanId)> {
    let by_id: HashMap<SpanId, &SpanRecord> = spans.iter().map(|s| (s.span_id, s)).collect();
    // Whether `s` descends from `target` (walk up, bounded by the trace's size: a cycle in
    // parent ids cannot loop).
    let descends = |s: &SpanRecord| {
        let mut cur = s.parent_span_id;
        for _ in 0..spans.len() {
            match cur {
                Some(p) if p == target.span_id => return true,
                Some(p) => cur = by_id.get(&p).and_then(|x| x.parent_span_id),
                None => return false,
            }
        }
        false
    };
    let mut sources: Vec<&SpanRecord> = spans
        .iter()
        .filter(|s| s.span_id != target.span_id && s.name != EVALUATION_SPAN)
        .filter(|s| s.start <= target.start && has_documents(&s.attributes))
        .filter(|s| !descends(s))
        .collect();
    sources.sort_by_key(|s| (s.start, s.span_id));
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for s in sources {
        for d in documents(&s.attributes) {
            // The same document retrieved twice counts once.
            if seen.insert((d.id.clone(), d.text.len())) {
                out.push((d, s.span_id));
            }
        }
    }
    out
}

/// Scores every LLM span of one trace that has an answer and context documents and no
/// evaluation yet; returns the evaluation spans to store.
pub fn evaluate_trace(spans: &[SpanRecord]) -> Vec<SpanRecord> {
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
        let Some(answer) = answer_text(&target.attributes, &target.events) else {
            continue;
        };
        let ctx = context(spans, target);
        if ctx.is_empty() {
            continue;
        }
        if let Some(e) = evaluate(target, &answer, ctx) {
            out.push(e);
        }
    }
    out
}

fn evaluate(
    target: &SpanRecord,
    answer: &str,
    ctx: Vec<(RetrievedDocument, SpanId)>,
) -> Option<SpanRecord> {
    let (docs, sources): (Vec<RetrievedDocument>, Vec<SpanId>) = ctx.into_iter().unzip();
    // The same work bound as the detect API: larger pairs are not scored.
    check_work(answer, &docs).ok()?;
    let uncertainty = logprobs_text(&target.attributes, &target.events)
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
    let strs = |v: Vec<String>| AttrValue::Array(v.into_iter().map(AttrValue::Str).collect());
    let mut supporting: Vec<String> = Vec::new();
    let mut unsupported = 0i64;
    let evidence: Vec<serde_json::Value> = report
        .grounding
        .sentences
        .iter()
        .map(|s| {
            if !s.supported && s.weight > 0.0 {
                unsupported += 1;
            }
            if s.supported
                && let Some(b) = &s.best
                && !supporting.contains(&b.document_id)
            {
                supporting.push(b.document_id.clone());
            }
            json!({
                "sentence_index": s.sentence_index,
                "start_char": s.span.start_char,
                "end_char": s.span.end_char,
                "supported": s.supported,
                "best": s.best.as_ref().map(|b| json!({
                    "document_id": b.document_id,
                    "start_char": b.span.start_char,
                    "end_char": b.span.end_char,
                    "coverage": b.coverage,
                })),
            })
        })
        .collect();
    let mut source_ids: Vec<String> = Vec::new();
    for s in &sources {
        let hex = s.to_hex();
        if !source_ids.contains(&hex) {
            source_ids.push(hex);
        }
    }
    let ev = [
        (
            "sightline.evaluation.name",
            AttrValue::Str("hallucination_index".into()),
        ),
        (TARGET_KEY, AttrValue::Str(target.span_id.to_hex())),
        (
            "sightline.evaluation.label",
            AttrValue::Str(
                match report.evaluation.score_label {
                    RiskLabel::Low => "low",
                    RiskLabel::Medium => "medium",
                    RiskLabel::High => "high",
                }
                .into(),
            ),
        ),
        (
            "sightline.evaluation.explanation",
            AttrValue::Str(report.evaluation.explanation.clone()),
        ),
        (
            "sightline.evaluation.documents",
            strs(docs.iter().map(|d| d.id.clone()).collect()),
        ),
        ("sightline.evaluation.source_span_ids", strs(source_ids)),
        (
            "sightline.evaluation.supporting_documents",
            strs(supporting),
        ),
        (
            "sightline.evaluation.unsupported_sentences",
            AttrValue::Int(unsupported),
        ),
        (
            "sightline.evaluation.evidence",
            AttrValue::Str(serde_json::Value::Array(evidence).to_string()),
        ),
    ];
    e.attributes
        .extend(ev.into_iter().map(|(k, v)| (k.to_owned(), v)));
    Some(e)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use sightline_storage::{TraceId, UnixNanos};

    fn s(v: &str) -> AttrValue {
        AttrValue::Str(v.into())
    }

    fn span(id: u8, parent: Option<u8>, start: i64, attrs: Vec<(&str, AttrValue)>) -> SpanRecord {
        let mut r = SpanRecord::new(
            TraceId([9; 16]),
            SpanId([id; 8]),
            "rag",
            format!("span {id}"),
            UnixNanos(start),
            UnixNanos(start + 10),
        );
        r.parent_span_id = parent.map(|p| SpanId([p; 8]));
        r.attributes = attrs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        r
    }

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
        let g = evaluate_trace(&good);
        let b = evaluate_trace(&bad);
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
        // Dimensions and small attributes are copied, usage and content are not.
        assert_eq!(g.gen_ai.request_model.as_deref(), Some("gpt-4o"));
        assert_eq!(g.gen_ai.input_tokens, None);
        assert_eq!(attr(g, "app.route"), &s("/ask"));
        assert!(!g.attributes.iter().any(|(k, _)| k == "input.value"));
        // Evaluated once: with its evaluation in the trace, nothing more is written.
        let mut again = good.clone();
        again.push(g.clone());
        assert!(evaluate_trace(&again).is_empty());
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
        assert!(evaluate_trace(&spans).is_empty());
        // No answer, no evaluation.
        let spans = vec![retriever(3, None, 0), span(4, None, 5, vec![])];
        assert!(evaluate_trace(&spans).is_empty());
    }
}
