//! GenAI semantic conventions (v1.37 to v1.41) promoted to [`GenAiFields`], and the quality
//! fields computed at ingest ([`QualityFields`]) with `sightline_detect`, from the answer,
//! logprobs and documents [`content`] reads.
//!
//! ## Promotion
//!
//! | column | canonical key | aliases (lower rank first) |
//! |---|---|---|
//! | operation_name | `gen_ai.operation.name` | |
//! | provider_name | `gen_ai.provider.name` | `gen_ai.system` (deprecated), `llm.provider`, `llm.system` (OpenInference) |
//! | request_model | `gen_ai.request.model` | `model` of `llm.invocation_parameters` (OpenInference) |
//! | response_model | `gen_ai.response.model` | `llm.model_name` (OpenInference) |
//! | input_tokens | `gen_ai.usage.input_tokens` | `gen_ai.usage.prompt_tokens` (deprecated), `llm.token_count.prompt` |
//! | output_tokens | `gen_ai.usage.output_tokens` | `gen_ai.usage.completion_tokens` (deprecated), `llm.token_count.completion` |
//! | total_tokens | `gen_ai.usage.total_tokens` (de-facto) | `llm.token_count.total` |
//! | cache_read_input_tokens | `gen_ai.usage.cache_read.input_tokens` | `gen_ai.usage.cache_read_input_tokens`, `llm.token_count.prompt_details.cache_read` |
//! | cost | `gen_ai.usage.cost` (de-facto) | `llm.cost.total` |
//! | temperature | `gen_ai.request.temperature` | |
//! | finish_reasons | `gen_ai.response.finish_reasons` | |
//! | conversation_id | `gen_ai.conversation.id` | |
//!
//! The operation of an OpenInference span comes from `openinference.span.kind` (`LLM`: `chat`
//! when it has input messages, else `text_completion`; `EMBEDDING`: `embeddings`; `TOOL`:
//! `execute_tool`; `AGENT`: `invoke_agent`).
//!
//! The canonical key wins over aliases. A canonical attribute is removed from the generic
//! attribute list only when its value had exactly the column's type (string, int, double,
//! array of strings), so reading the column back gives the attribute back. Aliases and
//! converted values (`"42"` for a token count, an int temperature) fill the column and stay
//! in the attribute list as sent. Nothing is ever dropped.

use sightline_detect::entropy::{UncertaintyOptions, response_uncertainty};
use sightline_detect::hallucination::{HallucinationOptions, hallucination_index_parts};
use sightline_detect::logprobs::parse_logprobs;
use sightline_storage::{AttrValue, Attributes, GenAiFields, QualityFields, SpanEvent, SpanId};

pub mod content;
pub mod evidence;
pub mod log_events;
pub mod prompt;

pub use content::{
    DOCUMENTS_KEY, LOGPROBS_KEY, OUTPUT_MESSAGES_KEY, answer_text, documents, logprobs_text,
};
use content::{find, is_openinference, json_value, logprobs_source, scored_documents};
use evidence::{ContextItem, ContextKind, Dimensions, evidence_attributes, route_of};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Target {
    Operation,
    Provider,
    RequestModel,
    ResponseModel,
    Input,
    Output,
    Total,
    CacheRead,
    Cost,
    Temperature,
    FinishReasons,
    Conversation,
}

/// `(key, column, rank)`; rank 0 is the canonical key.
const KEYS: &[(&str, Target, u8)] = &[
    ("gen_ai.operation.name", Target::Operation, 0),
    ("gen_ai.provider.name", Target::Provider, 0),
    ("gen_ai.system", Target::Provider, 1),
    ("llm.provider", Target::Provider, 2),
    ("llm.system", Target::Provider, 3),
    ("gen_ai.request.model", Target::RequestModel, 0),
    ("gen_ai.response.model", Target::ResponseModel, 0),
    ("llm.model_name", Target::ResponseModel, 2),
    ("gen_ai.usage.input_tokens", Target::Input, 0),
    ("gen_ai.usage.prompt_tokens", Target::Input, 1),
    ("llm.token_count.prompt", Target::Input, 2),
    ("gen_ai.usage.output_tokens", Target::Output, 0),
    ("gen_ai.usage.completion_tokens", Target::Output, 1),
    ("llm.token_count.completion", Target::Output, 2),
    ("gen_ai.usage.total_tokens", Target::Total, 0),
    ("llm.token_count.total", Target::Total, 2),
    ("gen_ai.usage.cache_read.input_tokens", Target::CacheRead, 0),
    ("gen_ai.usage.cache_read_input_tokens", Target::CacheRead, 1),
    (
        "llm.token_count.prompt_details.cache_read",
        Target::CacheRead,
        2,
    ),
    ("gen_ai.usage.cost", Target::Cost, 0),
    ("llm.cost.total", Target::Cost, 2),
    ("gen_ai.request.temperature", Target::Temperature, 0),
    ("gen_ai.response.finish_reasons", Target::FinishReasons, 0),
    ("gen_ai.conversation.id", Target::Conversation, 0),
];

enum Typed {
    Str(String),
    Int(i64),
    Double(f64),
    Strings(Vec<String>),
}

/// Converts `v` to the column's type; the flag says whether it already had that type.
fn convert(target: Target, v: &AttrValue) -> Option<(Typed, bool)> {
    use Target as T;
    match target {
        T::Operation | T::Provider | T::RequestModel | T::ResponseModel | T::Conversation => {
            match v {
                AttrValue::Str(s) => Some((Typed::Str(s.clone()), true)),
                AttrValue::Int(_) | AttrValue::Double(_) | AttrValue::Bool(_) => {
                    Some((Typed::Str(v.render()), false))
                }
                _ => None,
            }
        }
        T::Input | T::Output | T::Total | T::CacheRead => match v {
            AttrValue::Int(i) => Some((Typed::Int(*i), true)),
            AttrValue::Double(d) if d.is_finite() && d.fract() == 0.0 && d.abs() < 9.0e15 => {
                Some((Typed::Int(*d as i64), false))
            }
            AttrValue::Str(s) => s.trim().parse().ok().map(|i| (Typed::Int(i), false)),
            _ => None,
        },
        T::Cost | T::Temperature => match v {
            AttrValue::Double(d) => Some((Typed::Double(*d), true)),
            AttrValue::Int(i) => Some((Typed::Double(*i as f64), false)),
            AttrValue::Str(s) => s.trim().parse().ok().map(|d| (Typed::Double(d), false)),
            _ => None,
        },
        T::FinishReasons => match v {
            AttrValue::Array(items) => {
                let strs: Option<Vec<String>> = items
                    .iter()
                    .map(|i| match i {
                        AttrValue::Str(s) => Some(s.clone()),
                        _ => None,
                    })
                    .collect();
                strs.map(|s| (Typed::Strings(s), true))
            }
            AttrValue::Str(s) => Some((Typed::Strings(vec![s.clone()]), false)),
            _ => None,
        },
    }
}

fn assign(f: &mut GenAiFields, target: Target, v: Typed) {
    use Target as T;
    match (target, v) {
        (T::Operation, Typed::Str(s)) => f.operation_name = Some(s),
        (T::Provider, Typed::Str(s)) => f.provider_name = Some(s),
        (T::RequestModel, Typed::Str(s)) => f.request_model = Some(s),
        (T::ResponseModel, Typed::Str(s)) => f.response_model = Some(s),
        (T::Conversation, Typed::Str(s)) => f.conversation_id = Some(s),
        (T::Input, Typed::Int(i)) => f.input_tokens = Some(i),
        (T::Output, Typed::Int(i)) => f.output_tokens = Some(i),
        (T::Total, Typed::Int(i)) => f.total_tokens = Some(i),
        (T::CacheRead, Typed::Int(i)) => f.cache_read_input_tokens = Some(i),
        (T::Cost, Typed::Double(d)) => f.cost = Some(d),
        (T::Temperature, Typed::Double(d)) => f.temperature = Some(d),
        (T::FinishReasons, Typed::Strings(s)) => f.finish_reasons = s,
        _ => {}
    }
}

/// Fills the GenAI columns from `attrs`, removing the canonical attributes that were mapped
/// losslessly (see the module docs).
pub fn promote(attrs: &mut Attributes) -> GenAiFields {
    let mut fields = GenAiFields::default();
    // Per column: (rank, attribute index, lossless) of the chosen source.
    let mut chosen: Vec<(Target, u8, usize, bool)> = Vec::new();
    let mut values: Vec<(usize, Typed)> = Vec::new();
    for (i, (k, v)) in attrs.iter().enumerate() {
        if !(k.starts_with("gen_ai.") || k.starts_with("llm.")) {
            continue;
        }
        let Some(&(_, target, rank)) = KEYS.iter().find(|(key, _, _)| key == k) else {
            continue;
        };
        let Some((typed, lossless)) = convert(target, v) else {
            continue;
        };
        match chosen.iter_mut().find(|c| c.0 == target) {
            Some(c) if c.1 <= rank => continue,
            Some(c) => *c = (target, rank, i, lossless),
            None => chosen.push((target, rank, i, lossless)),
        }
        values.push((i, typed));
    }
    let mut remove: Vec<usize> = Vec::new();
    for (target, rank, index, lossless) in chosen {
        if let Some(pos) = values.iter().position(|(i, _)| *i == index) {
            let (_, typed) = values.swap_remove(pos);
            assign(&mut fields, target, typed);
            if rank == 0 && lossless {
                remove.push(index);
            }
        }
    }
    remove.sort_unstable();
    for i in remove.into_iter().rev() {
        attrs.remove(i);
    }
    derive(attrs, &mut fields);
    fields
}

/// Columns no attribute names directly, derived from OpenInference's attributes when still
/// empty: the operation from `openinference.span.kind`, the request model from
/// `llm.invocation_parameters` (OpenInference's `llm.model_name` is the response's model).
fn derive(attrs: &Attributes, f: &mut GenAiFields) {
    if f.operation_name.is_none() {
        let has_messages = attrs
            .iter()
            .any(|(k, _)| k.starts_with("llm.input_messages."));
        f.operation_name = [
            (
                "LLM",
                if has_messages {
                    "chat"
                } else {
                    "text_completion"
                },
            ),
            ("EMBEDDING", "embeddings"),
            ("TOOL", "execute_tool"),
            ("AGENT", "invoke_agent"),
        ]
        .into_iter()
        .find(|(kind, _)| is_openinference(attrs, kind))
        .map(|(_, op)| op.to_owned());
    }
    if f.request_model.is_none()
        && let Some(model) = find(attrs, "llm.invocation_parameters")
            .and_then(json_value)
            .and_then(|p| p.get("model").and_then(|m| m.as_str().map(str::to_owned)))
    {
        f.request_model = Some(model);
    }
}

/// What computing quality fields found (for the server's own metrics).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QualityOutcome {
    /// Logprobs were present.
    pub logprobs_found: bool,
    /// They could not be parsed or scored (the span is kept, the columns stay empty).
    pub logprobs_error: Option<String>,
    /// A hallucination index was computed.
    pub hallucination_scored: bool,
}

/// Computes the quality columns of span `span_id` from its attributes and events, and, when
/// the span carries its own documents and an answer, the evidence attributes of its
/// hallucination index ([`evidence`]) to add to it.
pub fn quality(
    span_id: SpanId,
    attrs: &Attributes,
    events: &[SpanEvent],
) -> (QualityFields, QualityOutcome, Attributes) {
    let mut q = QualityFields::default();
    let mut outcome = QualityOutcome::default();
    let opts = UncertaintyOptions::default();
    let mut uncertainty = None;
    if let Some(src) = logprobs_source(attrs, events) {
        outcome.logprobs_found = true;
        let parsed = src
            .text()
            .ok_or_else(|| "logprobs must be a JSON string or a structured value".to_owned())
            .and_then(|t| parse_logprobs(&t).map_err(|e| e.to_string()))
            .and_then(|lp| response_uncertainty(&lp, &opts).map_err(|e| e.to_string()));
        match parsed {
            Ok(u) => {
                q.entropy_mean = u.entropy_mean;
                q.entropy_max = u.entropy_max;
                q.low_confidence_tokens = i64::try_from(u.low_confidence.tokens_below).ok();
                if u.tokens > 0 {
                    uncertainty = Some(u);
                }
            }
            Err(e) => outcome.logprobs_error = Some(e),
        }
    }
    let mut scored = Attributes::new();
    let ctx: Vec<ContextItem> = scored_documents(attrs)
        .into_iter()
        .map(|(doc, score)| ContextItem {
            doc,
            kind: ContextKind::Document,
            source: span_id,
            score,
        })
        .collect();
    if !ctx.is_empty()
        && let Some(answer) = answer_text(attrs, events)
    {
        let docs: Vec<_> = ctx.iter().map(|c| c.doc.clone()).collect();
        let hopts = HallucinationOptions::default();
        if let Ok(report) = hallucination_index_parts(&answer, &docs, uncertainty, &hopts) {
            q.hallucination_index = Some(report.evaluation.score_value);
            outcome.hallucination_scored = true;
            let dims = Dimensions {
                route: route_of(attrs),
                prompt_template: prompt::template_name(attrs),
            };
            scored = evidence_attributes(span_id, &answer, &report, &ctx, dims);
        }
    }
    (q, outcome, scored)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> AttrValue {
        AttrValue::Str(v.into())
    }

    #[test]
    fn canonical_lossless_removed_aliases_kept() {
        let mut attrs: Attributes = vec![
            ("gen_ai.system".into(), s("openai")),
            ("gen_ai.request.model".into(), s("gpt-4o")),
            ("gen_ai.usage.prompt_tokens".into(), AttrValue::Int(10)),
            ("gen_ai.usage.output_tokens".into(), s("7")),
            ("llm.cost.total".into(), AttrValue::Double(0.01)),
            ("gen_ai.request.temperature".into(), AttrValue::Double(0.2)),
            (
                "gen_ai.response.finish_reasons".into(),
                AttrValue::Array(vec![s("stop")]),
            ),
            ("other".into(), AttrValue::Int(1)),
        ];
        let f = promote(&mut attrs);
        assert_eq!(f.provider_name.as_deref(), Some("openai"));
        assert_eq!(f.request_model.as_deref(), Some("gpt-4o"));
        assert_eq!(f.input_tokens, Some(10));
        assert_eq!(f.output_tokens, Some(7));
        assert_eq!(f.cost, Some(0.01));
        assert_eq!(f.temperature, Some(0.2));
        assert_eq!(f.finish_reasons, vec!["stop".to_owned()]);
        let keys: Vec<&str> = attrs.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            vec![
                "gen_ai.system",
                "gen_ai.usage.prompt_tokens",
                "gen_ai.usage.output_tokens",
                "llm.cost.total",
                "other"
            ]
        );
    }

    #[test]
    fn canonical_beats_alias() {
        let mut attrs: Attributes = vec![
            ("gen_ai.system".into(), s("old")),
            ("gen_ai.provider.name".into(), s("new")),
            ("llm.token_count.prompt".into(), AttrValue::Int(3)),
            ("gen_ai.usage.prompt_tokens".into(), AttrValue::Int(4)),
        ];
        let f = promote(&mut attrs);
        assert_eq!(f.provider_name.as_deref(), Some("new"));
        assert_eq!(f.input_tokens, Some(4));
        assert_eq!(attrs.len(), 3);
    }

    #[test]
    fn quality_from_attribute_and_event() {
        let lp = r#"{"content":[{"token":"A","logprob":-0.1,"top_logprobs":[{"token":"A","logprob":-0.1},{"token":"B","logprob":-2.5}]},
                                {"token":"x","logprob":-1.2,"top_logprobs":[{"token":"y","logprob":-0.9},{"token":"x","logprob":-1.2}]}]}"#;
        let attrs: Attributes = vec![(LOGPROBS_KEY.into(), s(lp))];
        let (q, o, e) = quality(SpanId([1; 8]), &attrs, &[]);
        assert!(e.is_empty(), "no documents, no evidence");
        assert!(o.logprobs_found && o.logprobs_error.is_none());
        let mean = q.entropy_mean.unwrap_or(f64::NAN);
        let max = q.entropy_max.unwrap_or(f64::NAN);
        assert!(mean > 0.0 && max >= mean, "{q:?}");
        assert_eq!(q.low_confidence_tokens, Some(1));
        let ev = SpanEvent {
            time: sightline_storage::UnixNanos(1),
            name: "gen_ai.choice".into(),
            attributes: vec![(LOGPROBS_KEY.into(), s(lp))],
        };
        let (q2, _, _) = quality(SpanId([1; 8]), &Vec::new(), &[ev]);
        assert_eq!(q2, q);
        let (q3, o3, _) = quality(
            SpanId([1; 8]),
            &vec![(LOGPROBS_KEY.into(), s("{nope"))],
            &[],
        );
        assert_eq!(q3, QualityFields::default());
        assert!(o3.logprobs_error.is_some());
    }

    #[test]
    fn hallucination_with_documents() {
        let attrs: Attributes = vec![
            (
                DOCUMENTS_KEY.into(),
                s(
                    r#"[{"id":"d1","text":"The Eiffel Tower is 330 metres tall and stands in Paris."}]"#,
                ),
            ),
            (
                OUTPUT_MESSAGES_KEY.into(),
                s(
                    r#"[{"role":"assistant","parts":[{"type":"text","content":"The Eiffel Tower is 330 metres tall."}]}]"#,
                ),
            ),
        ];
        let (grounded, o, evidence) = quality(SpanId([7; 8]), &attrs, &[]);
        assert!(o.hallucination_scored);
        // The span holds its own evidence: the supporting document and the passage's text.
        let at = |k: &str| {
            evidence
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(at(evidence::NAME_KEY), Some(s("hallucination_index")));
        assert_eq!(at(evidence::TARGET_KEY), Some(s(&SpanId([7; 8]).to_hex())));
        assert_eq!(
            at("sightline.evaluation.supporting_documents"),
            Some(AttrValue::Array(vec![s("d1")]))
        );
        let Some(AttrValue::Str(ev)) = at("sightline.evaluation.evidence") else {
            panic!("no evidence in {evidence:?}")
        };
        let ev: serde_json::Value = serde_json::from_str(&ev).unwrap_or_default();
        assert_eq!(ev[0]["text"], "The Eiffel Tower is 330 metres tall.");
        assert_eq!(ev[0]["supported"], true);
        assert_eq!(ev[0]["best"]["document_id"], "d1");
        assert_eq!(ev[0]["best"]["kind"], "document");
        assert!(
            ev[0]["best"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("330 metres")),
            "{ev}"
        );
        let mut bad = attrs.clone();
        bad[1].1 = s(
            r#"[{"role":"assistant","parts":[{"type":"text","content":"The Eiffel Tower is 912 metres tall and was built by Napoleon in Berlin."}]}]"#,
        );
        let (ungrounded, _, bad_evidence) = quality(SpanId([7; 8]), &bad, &[]);
        let unsupported = bad_evidence
            .iter()
            .find(|(k, _)| k == "sightline.evaluation.unsupported_sentences")
            .map(|(_, v)| v.clone());
        assert!(
            matches!(unsupported, Some(AttrValue::Int(n)) if n > 0),
            "{bad_evidence:?}"
        );
        let (g, u) = (
            grounded.hallucination_index.unwrap_or(f64::NAN),
            ungrounded.hallucination_index.unwrap_or(f64::NAN),
        );
        assert!(g < u, "grounded {g} vs ungrounded {u}");
    }
}
