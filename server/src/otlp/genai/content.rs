//! What an LLM span says in words: its answer, the logprobs of that answer and the documents
//! it retrieved, read from every dialect the instrumentation libraries write.
//!
//! | piece | read from (first found wins) |
//! |---|---|
//! | answer | `gen_ai.output.messages` (GenAI semconv 1.37+, JSON text or structured: `parts[].content` of text parts, or a message's `content`); OpenInference `llm.output_messages.<i>.message.content` / `.message.contents.<j>.message_content.text`; OpenLLMetry `gen_ai.completion.<i>.content`; `gen_ai.completion`; events `gen_ai.client.inference.operation.details` (`gen_ai.output.messages`) and `gen_ai.choice` (`message`, `content`); OpenInference `output.value` of an `LLM` span (a chat completion's `choices[].message.content`, or the text itself when `output.mime_type` is not JSON) |
//! | logprobs | `gen_ai.response.logprobs` on the span or on a `gen_ai.choice` / `gen_ai.response.logprobs` event (`gen_ai.response.logprobs` or `logprobs`); OpenInference `output.value` (a chat completion's `choices[0].logprobs`) |
//! | documents | `gen_ai.retrieval.documents` (`[{"id", "text" or "content", "score"}]`); OpenInference `retrieval.documents.<i>.document.{id,content,score}` (an id missing there is taken from the `documents` of `output.value`, where LangChain's retrievers put it) |
//!
//! Events may be span events or GenAI log records correlated to the span
//! ([`super::log_events`]). Prompts, system instructions and tool results are read by
//! [`super::prompt`]. Every reader is bounded by what the span holds (attribute sizes are
//! limited at ingest).

use serde_json::Value;
use sightline_detect::hallucination::RetrievedDocument;
use sightline_storage::{AttrValue, Attributes, SpanEvent};

/// Attribute carrying OpenAI-shaped logprobs (on the span or on an event).
pub const LOGPROBS_KEY: &str = "gen_ai.response.logprobs";
/// Attribute carrying the retrieved documents (`[{"id", "text"}]`).
pub const DOCUMENTS_KEY: &str = "gen_ai.retrieval.documents";
/// Attribute carrying the output messages.
pub const OUTPUT_MESSAGES_KEY: &str = "gen_ai.output.messages";
/// OpenInference's span kind attribute.
pub const OPENINFERENCE_KIND_KEY: &str = "openinference.span.kind";

/// Whether `key` holds LLM content (prompts, answers, tool calls, documents, logprobs): the
/// attributes that may be large, kept up to `max_content_bytes_per_span` and never copied
/// to evaluation spans.
pub fn is_content_key(key: &str) -> bool {
    const PREFIXES: [&str; 11] = [
        "gen_ai.input.",
        "gen_ai.output.",
        "gen_ai.prompt",
        "gen_ai.completion",
        "gen_ai.system_instructions",
        "gen_ai.response.logprobs",
        "gen_ai.retrieval.documents",
        "gen_ai.tool.call.",
        "llm.input_messages.",
        "llm.output_messages.",
        "retrieval.documents.",
    ];
    PREFIXES.iter().any(|p| key.starts_with(p))
        || key == "input.value"
        || key == "output.value"
        || key == "message"
        || key == "content"
        || key == "llm.invocation_parameters"
}

pub(crate) fn find<'a>(attrs: &'a Attributes, key: &str) -> Option<&'a AttrValue> {
    attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn find_str<'a>(attrs: &'a Attributes, key: &str) -> Option<&'a str> {
    match find(attrs, key) {
        Some(AttrValue::Str(s)) => Some(s),
        _ => None,
    }
}

/// The value as JSON text: strings verbatim, structured values rendered.
pub(crate) fn json_text(v: &AttrValue) -> Option<String> {
    match v {
        AttrValue::Str(s) => Some(s.clone()),
        AttrValue::Array(_) | AttrValue::KvList(_) => Some(v.to_json().to_string()),
        _ => None,
    }
}

pub(crate) fn json_value(v: &AttrValue) -> Option<Value> {
    match v {
        AttrValue::Str(s) => serde_json::from_str(s).ok(),
        AttrValue::Array(_) | AttrValue::KvList(_) => Some(v.to_json()),
        _ => None,
    }
}

/// Whether the span is an OpenInference span of `kind` (`LLM`, `RETRIEVER`, ...).
pub(crate) fn is_openinference(attrs: &Attributes, kind: &str) -> bool {
    find_str(attrs, OPENINFERENCE_KIND_KEY).is_some_and(|k| k.eq_ignore_ascii_case(kind))
}

/// OpenInference's `output.value` of an LLM span, parsed when it is JSON.
fn openinference_output(attrs: &Attributes) -> Option<Value> {
    if !is_openinference(attrs, "LLM") {
        return None;
    }
    let text = find_str(attrs, "output.value")?;
    let json = find_str(attrs, "output.mime_type").is_none_or(|m| m.contains("json"));
    if json {
        serde_json::from_str(text).ok()
    } else {
        Some(Value::String(text.to_owned()))
    }
}

/// Where the logprobs of the span's answer are, if anywhere.
pub(crate) enum LogprobsSource<'a> {
    /// An attribute (of the span or of an event).
    Attr(&'a AttrValue),
    /// Inside a parsed JSON document (OpenInference's `output.value`).
    Json(Value),
}

impl LogprobsSource<'_> {
    /// The logprobs as JSON text.
    pub(crate) fn text(&self) -> Option<String> {
        match self {
            Self::Attr(v) => json_text(v),
            Self::Json(v) => Some(v.to_string()),
        }
    }
}

pub(crate) fn logprobs_source<'a>(
    attrs: &'a Attributes,
    events: &'a [SpanEvent],
) -> Option<LogprobsSource<'a>> {
    if let Some(v) = find(attrs, LOGPROBS_KEY) {
        return Some(LogprobsSource::Attr(v));
    }
    let from_event = events
        .iter()
        .filter(|e| e.name == LOGPROBS_KEY || e.name == "gen_ai.choice")
        .find_map(|e| {
            find(&e.attributes, LOGPROBS_KEY).or_else(|| find(&e.attributes, "logprobs"))
        });
    if let Some(v) = from_event {
        return Some(LogprobsSource::Attr(v));
    }
    let out = openinference_output(attrs)?;
    let lp = out.get("choices")?.get(0)?.get("logprobs")?;
    (lp.is_object() && lp.get("content").is_some_and(Value::is_array))
        .then(|| LogprobsSource::Json(lp.clone()))
}

/// The logprobs a span carries, in any of the accepted places, as JSON text.
pub fn logprobs_text(attrs: &Attributes, events: &[SpanEvent]) -> Option<String> {
    logprobs_source(attrs, events).and_then(|s| s.text())
}

/// Text of output messages: `parts[].content` of `type: "text"` parts (v1.37+), a message's
/// `content` string (older shape), a chat completion's `choices[].message`, joined by
/// newlines.
fn message_text(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Array(items) => items.iter().for_each(|m| message_text(m, out)),
        Value::Object(m) => {
            if let Some(Value::Array(parts)) = m.get("parts") {
                for p in parts {
                    let is_text = p
                        .get("type")
                        .and_then(Value::as_str)
                        .is_none_or(|t| t == "text");
                    if let (true, Some(c)) = (is_text, p.get("content").and_then(Value::as_str)) {
                        out.push(c.to_owned());
                    }
                }
            } else if let Some(c) = m.get("content").and_then(Value::as_str) {
                out.push(c.to_owned());
            } else if let Some(msg) = m.get("message") {
                message_text(msg, out);
            } else if let Some(choices) = m.get("choices") {
                message_text(choices, out);
            }
        }
        Value::String(s) => out.push(s.clone()),
        _ => {}
    }
}

/// Values of `prefix<i>suffix` attributes in index order (flattened lists).
fn indexed<'a>(attrs: &'a Attributes, prefix: &str, suffix: &str) -> Vec<(usize, &'a str)> {
    let mut out: Vec<(usize, &str)> = attrs
        .iter()
        .filter_map(|(k, v)| {
            let idx = k.strip_prefix(prefix)?.strip_suffix(suffix)?;
            let i: usize = idx.parse().ok()?;
            match v {
                AttrValue::Str(s) => Some((i, s.as_str())),
                _ => None,
            }
        })
        .collect();
    out.sort_by_key(|(i, _)| *i);
    out
}

fn joined(parts: Vec<String>) -> Option<String> {
    let text = parts.join("\n");
    (!text.trim().is_empty()).then_some(text)
}

/// The span's answer text, in any of the dialects of the module docs.
pub fn answer_text(attrs: &Attributes, events: &[SpanEvent]) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(v) = find(attrs, OUTPUT_MESSAGES_KEY) {
        match json_value(v) {
            Some(j) => message_text(&j, &mut parts),
            None => {
                if let AttrValue::Str(s) = v {
                    parts.push(s.clone());
                }
            }
        }
        return joined(parts);
    }
    // OpenInference: whole-string content, else the text parts of `contents`.
    let oi = indexed(attrs, "llm.output_messages.", ".message.content");
    if !oi.is_empty() {
        return joined(oi.into_iter().map(|(_, s)| s.to_owned()).collect());
    }
    let oi_parts: Vec<String> = attrs
        .iter()
        .filter(|(k, _)| {
            k.starts_with("llm.output_messages.") && k.ends_with(".message_content.text")
        })
        .filter_map(|(_, v)| match v {
            AttrValue::Str(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    if !oi_parts.is_empty() {
        return joined(oi_parts);
    }
    // OpenLLMetry: gen_ai.completion.<i>.content.
    let ol = indexed(attrs, "gen_ai.completion.", ".content");
    if !ol.is_empty() {
        return joined(ol.into_iter().map(|(_, s)| s.to_owned()).collect());
    }
    if let Some(s) = find_str(attrs, "gen_ai.completion") {
        return joined(vec![s.to_owned()]);
    }
    for e in events {
        match e.name.as_str() {
            "gen_ai.client.inference.operation.details" => {
                if let Some(j) = find(&e.attributes, OUTPUT_MESSAGES_KEY).and_then(json_value) {
                    message_text(&j, &mut parts);
                }
            }
            "gen_ai.choice" => {
                if let Some(j) = find(&e.attributes, "message").and_then(json_value) {
                    message_text(&j, &mut parts);
                } else if let Some(c) = find_str(&e.attributes, "content") {
                    parts.push(c.to_owned());
                }
            }
            _ => {}
        }
    }
    if !parts.is_empty() {
        return joined(parts);
    }
    if let Some(out) = openinference_output(attrs) {
        message_text(&out, &mut parts);
    }
    joined(parts)
}

/// The documents a span retrieved, in any of the dialects of the module docs.
pub fn documents(attrs: &Attributes) -> Vec<RetrievedDocument> {
    scored_documents(attrs)
        .into_iter()
        .map(|(d, _)| d)
        .collect()
}

/// The documents a span retrieved with the retriever's score of each, when it gave one
/// (`score` of `gen_ai.retrieval.documents` items, OpenInference
/// `retrieval.documents.<i>.document.score`).
pub fn scored_documents(attrs: &Attributes) -> Vec<(RetrievedDocument, Option<f64>)> {
    let mut docs = Vec::new();
    if let Some(Value::Array(items)) = find(attrs, DOCUMENTS_KEY).and_then(json_value) {
        for (i, d) in items.iter().enumerate() {
            let text = d
                .get("text")
                .or_else(|| d.get("content"))
                .and_then(Value::as_str);
            let id = match d.get("id") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => i.to_string(),
            };
            let score = d
                .get("score")
                .and_then(Value::as_f64)
                .filter(|s| s.is_finite());
            if let Some(text) = text {
                docs.push((
                    RetrievedDocument {
                        id,
                        text: text.to_owned(),
                    },
                    score,
                ));
            }
        }
    }
    if docs.is_empty() {
        // OpenInference flattens documents: retrieval.documents.<i>.document.{id,content}.
        // LangChain's retriever spans leave the id out of the flattened form; it is in
        // `output.value` (`{"documents": [{"id", "page_content"}]}`).
        let output_ids = find_str(attrs, "output.value")
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .and_then(|v| match v.get("documents") {
                Some(Value::Array(d)) => Some(d.clone()),
                _ => None,
            });
        for (idx, text) in indexed(attrs, "retrieval.documents.", ".document.content") {
            let id = find(attrs, &format!("retrieval.documents.{idx}.document.id"))
                .map(AttrValue::render)
                .or_else(|| {
                    let d = output_ids.as_ref()?.get(idx)?;
                    let same = d.get("page_content").and_then(Value::as_str) == Some(text);
                    same.then(|| d.get("id").and_then(Value::as_str).map(str::to_owned))?
                })
                .unwrap_or_else(|| idx.to_string());
            let score = match find(attrs, &format!("retrieval.documents.{idx}.document.score")) {
                Some(AttrValue::Double(d)) if d.is_finite() => Some(*d),
                Some(AttrValue::Int(i)) => Some(*i as f64),
                Some(AttrValue::Str(s)) => s.trim().parse::<f64>().ok().filter(|d| d.is_finite()),
                _ => None,
            };
            docs.push((
                RetrievedDocument {
                    id,
                    text: text.to_owned(),
                },
                score,
            ));
        }
    }
    docs
}

/// Whether the span carries retrieved documents in a form [`documents`] reads (cheap: keys
/// only).
pub fn has_documents(attrs: &Attributes) -> bool {
    attrs
        .iter()
        .any(|(k, _)| k == DOCUMENTS_KEY || k.starts_with("retrieval.documents."))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn s(v: &str) -> AttrValue {
        AttrValue::Str(v.into())
    }

    /// Attributes of a chat span as `openinference-instrumentation-openai` 0.1.66 writes them
    /// (`output.value` shortened to one token).
    fn openinference_chat() -> Attributes {
        vec![
            ("llm.system".into(), s("openai")),
            (
                "output.value".into(),
                s(
                    r#"{"id":"chatcmpl-fake","choices":[{"finish_reason":"stop","index":0,"logprobs":{"content":[{"token":"The","bytes":[84,104,101],"logprob":-0.05,"top_logprobs":[{"token":"The","logprob":-0.05},{"token":"alt1","logprob":-3.6}]}]},"message":{"content":"The Eiffel Tower is 330 metres tall.","role":"assistant"}}],"model":"gpt-4o-2024-08-06"}"#,
                ),
            ),
            ("output.mime_type".into(), s("application/json")),
            (
                "llm.invocation_parameters".into(),
                s(r#"{"model": "gpt-4o", "logprobs": true, "top_logprobs": 3}"#),
            ),
            ("llm.model_name".into(), s("gpt-4o-2024-08-06")),
            ("llm.output_messages.0.message.role".into(), s("assistant")),
            (
                "llm.output_messages.0.message.content".into(),
                s("The Eiffel Tower is 330 metres tall."),
            ),
            (OPENINFERENCE_KIND_KEY.into(), s("LLM")),
        ]
    }

    #[test]
    fn openinference_answer_and_logprobs() {
        let a = openinference_chat();
        assert_eq!(
            answer_text(&a, &[]).as_deref(),
            Some("The Eiffel Tower is 330 metres tall.")
        );
        let lp: Value = serde_json::from_str(&logprobs_text(&a, &[]).unwrap()).unwrap();
        assert_eq!(lp["content"][0]["token"], "The");
        // Without the flattened messages, the answer comes from output.value.
        let only_output: Attributes = a
            .into_iter()
            .filter(|(k, _)| !k.starts_with("llm.output_messages"))
            .collect();
        assert_eq!(
            answer_text(&only_output, &[]).as_deref(),
            Some("The Eiffel Tower is 330 metres tall.")
        );
    }

    #[test]
    fn output_value_of_other_spans_is_not_an_answer() {
        let a: Attributes = vec![
            (OPENINFERENCE_KIND_KEY.into(), s("CHAIN")),
            ("output.value".into(), s("some chain output")),
            ("output.mime_type".into(), s("text/plain")),
        ];
        assert_eq!(answer_text(&a, &[]), None);
        assert!(logprobs_text(&a, &[]).is_none());
    }

    #[test]
    fn semconv_openllmetry_and_event_answers() {
        // opentelemetry-instrumentation-openai-v2 2.4b0 with content on the span.
        let v2: Attributes = vec![(
            OUTPUT_MESSAGES_KEY.into(),
            s(
                r#"[{"role":"assistant","parts":[{"content":"Paris.","type":"text"}],"finish_reason":"stop"}]"#,
            ),
        )];
        assert_eq!(answer_text(&v2, &[]).as_deref(), Some("Paris."));
        let ol: Attributes = vec![
            ("gen_ai.completion.1.content".into(), s("second")),
            ("gen_ai.completion.0.role".into(), s("assistant")),
            ("gen_ai.completion.0.content".into(), s("first")),
        ];
        assert_eq!(answer_text(&ol, &[]).as_deref(), Some("first\nsecond"));
        let details = SpanEvent {
            time: sightline_storage::UnixNanos(1),
            name: "gen_ai.client.inference.operation.details".into(),
            attributes: vec![(
                OUTPUT_MESSAGES_KEY.into(),
                s(
                    r#"[{"role":"assistant","parts":[{"content":"From the event.","type":"text"}]}]"#,
                ),
            )],
        };
        assert_eq!(
            answer_text(&Vec::new(), &[details]).as_deref(),
            Some("From the event.")
        );
        let choice = SpanEvent {
            time: sightline_storage::UnixNanos(1),
            name: "gen_ai.choice".into(),
            attributes: vec![(
                "message".into(),
                s(r#"{"role":"assistant","content":"Hi."}"#),
            )],
        };
        assert_eq!(answer_text(&Vec::new(), &[choice]).as_deref(), Some("Hi."));
    }

    #[test]
    fn openinference_documents_in_index_order() {
        let a: Attributes = vec![
            ("retrieval.documents.1.document.content".into(), s("second")),
            ("retrieval.documents.1.document.id".into(), s("doc-b")),
            ("retrieval.documents.0.document.content".into(), s("first")),
            ("retrieval.documents.0.document.id".into(), s("doc-a")),
            (
                "retrieval.documents.0.document.score".into(),
                AttrValue::Double(0.9),
            ),
        ];
        let d = documents(&a);
        let ids: Vec<&str> = d.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["doc-a", "doc-b"]);
        assert_eq!(d[0].text, "first");
        assert!(has_documents(&a));
        let scores: Vec<Option<f64>> = scored_documents(&a).into_iter().map(|(_, s)| s).collect();
        assert_eq!(scores, [Some(0.9), None]);
    }

    #[test]
    fn langchain_retriever_ids_come_from_output_value() {
        // A VectorStoreRetriever span as openinference-instrumentation-langchain 0.1.80 writes
        // it: no document.id in the flattened form.
        let a: Attributes = vec![
            (
                "output.value".into(),
                s(
                    r#"{"documents": [{"id": "eiffel", "metadata": {}, "page_content": "The Eiffel Tower is 330 metres tall.", "type": "Document"}, {"id": "louvre", "metadata": {}, "page_content": "The Louvre is a museum.", "type": "Document"}]}"#,
                ),
            ),
            ("output.mime_type".into(), s("application/json")),
            (
                "retrieval.documents.0.document.content".into(),
                s("The Eiffel Tower is 330 metres tall."),
            ),
            (
                "retrieval.documents.1.document.content".into(),
                s("The Louvre is a museum."),
            ),
            (OPENINFERENCE_KIND_KEY.into(), s("RETRIEVER")),
        ];
        let ids: Vec<String> = documents(&a).into_iter().map(|d| d.id).collect();
        assert_eq!(ids, ["eiffel", "louvre"]);
    }
}
