//! What an LLM span was given: its input messages (system instructions, user turns, tool
//! results) in every dialect the instrumentation libraries write, and the results of tool
//! spans. The assembler takes system instructions and tool results as part of an answer's
//! context ([`crate::assembly::evaluate`]).
//!
//! | piece | read from (first found wins) |
//! |---|---|
//! | input messages | `gen_ai.input.messages` (GenAI semconv 1.37+: `role` and `parts[]`, text parts' `content`, `tool_call_response` parts' `response` and `id`); OpenInference `llm.input_messages.<i>.message.{role,content,tool_call_id}` (or `.message.contents.<j>.message_content.text`); OpenLLMetry `gen_ai.prompt.<i>.{role,content,tool_call_id}`; events (span events or correlated log records) `gen_ai.client.inference.operation.details` (`gen_ai.input.messages`), and semconv 1.28-1.36's `gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`, `gen_ai.tool.message` (`content`, `id`); OpenInference `input.value` of an `LLM` span (a chat request's `messages`) |
//! | system instructions | `gen_ai.system_instructions` (semconv 1.37+, on the span or in `gen_ai.client.inference.operation.details`), and every input message of role `system` or `developer` |
//! | tool results | input messages of role `tool`; tool spans (`gen_ai.operation.name` `execute_tool` or OpenInference `TOOL`): `gen_ai.tool.call.result`, else OpenInference `output.value`, named by `gen_ai.tool.name` / `tool.name` or the call id |
//!
//! Every reader is bounded by what the span holds (content is limited at ingest).

use serde_json::Value;
use sightline_storage::{AttrValue, Attributes, SpanEvent};

use super::content::{find, is_openinference, json_value};

/// Attribute carrying the system instructions (semconv 1.37+).
pub const SYSTEM_INSTRUCTIONS_KEY: &str = "gen_ai.system_instructions";
/// Attribute carrying the input messages (semconv 1.37+).
pub const INPUT_MESSAGES_KEY: &str = "gen_ai.input.messages";

/// One input message, as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputMessage {
    /// `system`, `developer`, `user`, `assistant` or `tool` (as the library wrote it,
    /// lowercased).
    pub role: String,
    /// Its text parts (and tool responses), joined by newlines.
    pub text: String,
    /// For a tool result: the id of the call it answers, when the library recorded it.
    pub tool_call_id: Option<String>,
}

fn str_of(v: Option<&AttrValue>) -> Option<&str> {
    match v {
        Some(AttrValue::Str(s)) => Some(s),
        _ => None,
    }
}

/// Text of a JSON value that is a string, or the JSON rendering of anything else.
fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// A message of the semconv 1.37+ shape (`role`, `parts`) or the older / OpenAI shape
/// (`role`, `content` as a string or a list of `{type: text, text}` parts).
fn message_of(m: &Value) -> Option<InputMessage> {
    let role = m.get("role").and_then(Value::as_str)?.to_ascii_lowercase();
    let mut texts = Vec::new();
    let mut tool_call_id = m
        .get("tool_call_id")
        .or_else(|| m.get("id"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(Value::Array(parts)) = m.get("parts") {
        for p in parts {
            match p.get("type").and_then(Value::as_str) {
                Some("text") | None => {
                    if let Some(c) = p.get("content").and_then(Value::as_str) {
                        texts.push(c.to_owned());
                    }
                }
                Some("tool_call_response") => {
                    if let Some(r) = p.get("response").and_then(text_of) {
                        texts.push(r);
                    }
                    if tool_call_id.is_none() {
                        tool_call_id = p.get("id").and_then(Value::as_str).map(str::to_owned);
                    }
                }
                Some(_) => {}
            }
        }
    } else {
        match m.get("content") {
            Some(Value::String(s)) => texts.push(s.clone()),
            Some(Value::Array(parts)) => texts.extend(parts.iter().filter_map(|p| {
                p.get("text")
                    .or_else(|| p.get("content"))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })),
            _ => {}
        }
    }
    let text = texts.join("\n");
    (!text.trim().is_empty()).then_some(InputMessage {
        role,
        text,
        tool_call_id,
    })
}

fn messages_of(v: &Value, out: &mut Vec<InputMessage>) {
    if let Value::Array(items) = v {
        out.extend(items.iter().filter_map(message_of));
    }
}

/// One message of a flattened list while it is read.
#[derive(Default)]
struct Flat {
    index: usize,
    role: String,
    /// (part index, text); the whole-string content is part 0.
    texts: Vec<(usize, String)>,
    tool_call_id: Option<String>,
}

/// Flattened messages `prefix<i>.<field>` (OpenInference, OpenLLMetry), in index order.
fn flattened(
    attrs: &Attributes,
    prefix: &str,
    role_key: &str,
    content_key: &str,
    tool_key: &str,
) -> Vec<InputMessage> {
    let mut by_index: Vec<Flat> = Vec::new();
    for (k, v) in attrs {
        let Some(rest) = k.strip_prefix(prefix) else {
            continue;
        };
        let Some((idx, field)) = rest.split_once('.') else {
            continue;
        };
        let Ok(index) = idx.parse::<usize>() else {
            continue;
        };
        let Some(s) = str_of(Some(v)) else {
            continue;
        };
        let pos = match by_index.iter().position(|e| e.index == index) {
            Some(p) => p,
            None => {
                by_index.push(Flat {
                    index,
                    ..Flat::default()
                });
                by_index.len() - 1
            }
        };
        let e = &mut by_index[pos];
        if field == role_key {
            e.role = s.to_ascii_lowercase();
        } else if field == content_key {
            e.texts.push((0, s.to_owned()));
        } else if field == tool_key {
            e.tool_call_id = Some(s.to_owned());
        } else if let Some(j) = field
            .strip_prefix("message.contents.")
            .and_then(|r| r.strip_suffix(".message_content.text"))
            .and_then(|j| j.parse::<usize>().ok())
        {
            e.texts.push((j + 1, s.to_owned()));
        }
    }
    by_index.sort_by_key(|e| e.index);
    by_index
        .into_iter()
        .filter_map(|mut m| {
            m.texts.sort_by_key(|(j, _)| *j);
            let text = m
                .texts
                .into_iter()
                .map(|(_, t)| t)
                .collect::<Vec<_>>()
                .join("\n");
            (!m.role.is_empty() && !text.trim().is_empty()).then_some(InputMessage {
                role: m.role,
                text,
                tool_call_id: m.tool_call_id,
            })
        })
        .collect()
}

/// The message a semconv 1.28-1.36 event names (`gen_ai.<role>.message`), from its `content`
/// (and a tool message's `id`).
fn legacy_event_message(e: &SpanEvent) -> Option<InputMessage> {
    let role = e
        .name
        .strip_prefix("gen_ai.")?
        .strip_suffix(".message")?
        .to_ascii_lowercase();
    let content = find(&e.attributes, "content")?;
    let text = match content {
        AttrValue::Str(s) => s.clone(),
        other => message_of(&serde_json::json!({"role": role, "content": other.to_json()}))
            .map(|m| m.text)?,
    };
    (!text.trim().is_empty()).then(|| InputMessage {
        role,
        text,
        tool_call_id: str_of(find(&e.attributes, "id")).map(str::to_owned),
    })
}

/// Most characters of a prompt template's text used as its name.
const TEMPLATE_NAME_CHARS: usize = 120;

/// A prompt template's name: OpenInference `llm.prompt_template.template` (its text on one
/// line, whitespace runs as one space, cut to 120 characters) or Traceloop's `traceloop.prompt.key`, with `@<version>` when
/// `llm.prompt_template.version` / `traceloop.prompt.version` is set.
pub fn template_name(attrs: &Attributes) -> Option<String> {
    let str_at = |k: &str| match find(attrs, k) {
        Some(AttrValue::Str(s)) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Some(v @ (AttrValue::Int(_) | AttrValue::Double(_))) => Some(v.render()),
        _ => None,
    };
    let (name, version) = match str_at("traceloop.prompt.key") {
        Some(key) => (key, str_at("traceloop.prompt.version")),
        None => {
            let text = str_at("llm.prompt_template.template")?;
            // One line: runs of whitespace become one space.
            let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let cut: String = flat.chars().take(TEMPLATE_NAME_CHARS).collect();
            (cut, str_at("llm.prompt_template.version"))
        }
    };
    Some(match version {
        Some(v) => format!("{name}@{v}"),
        None => name,
    })
}

/// The span's input messages, in any of the dialects of the module docs.
pub fn input_messages(attrs: &Attributes, events: &[SpanEvent]) -> Vec<InputMessage> {
    let mut out = Vec::new();
    if let Some(j) = find(attrs, INPUT_MESSAGES_KEY).and_then(json_value) {
        messages_of(&j, &mut out);
        return out;
    }
    let oi = flattened(
        attrs,
        "llm.input_messages.",
        "message.role",
        "message.content",
        "message.tool_call_id",
    );
    if !oi.is_empty() {
        return oi;
    }
    let ol = flattened(attrs, "gen_ai.prompt.", "role", "content", "tool_call_id");
    if !ol.is_empty() {
        return ol;
    }
    for e in events {
        if e.name == "gen_ai.client.inference.operation.details" {
            if let Some(j) = find(&e.attributes, INPUT_MESSAGES_KEY).and_then(json_value) {
                messages_of(&j, &mut out);
            }
        } else if let Some(m) = legacy_event_message(e) {
            out.push(m);
        }
    }
    if !out.is_empty() {
        return out;
    }
    if is_openinference(attrs, "LLM")
        && let Some(j) =
            str_of(find(attrs, "input.value")).and_then(|t| serde_json::from_str::<Value>(t).ok())
        && let Some(messages) = j.get("messages")
    {
        messages_of(messages, &mut out);
    }
    out
}

/// Text of `gen_ai.system_instructions` (a list of parts, or a string).
fn instructions_text(v: &AttrValue) -> Option<String> {
    let text = match json_value(v) {
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.clone()),
                _ => p.get("content").and_then(Value::as_str).map(str::to_owned),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::String(s)) => s,
        _ => str_of(Some(v))?.to_owned(),
    };
    (!text.trim().is_empty()).then_some(text)
}

/// What an LLM span was given besides its user turns: its system instructions and the tool
/// results in its input.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PromptContext {
    /// System (and developer) instructions, joined by newlines.
    pub system_instructions: Option<String>,
    /// Tool results: (call id or `None`, text), in message order.
    pub tool_results: Vec<(Option<String>, String)>,
}

/// The span's system instructions and tool results (see the module docs).
pub fn prompt_context(attrs: &Attributes, events: &[SpanEvent]) -> PromptContext {
    let mut system: Vec<String> = Vec::new();
    let explicit = find(attrs, SYSTEM_INSTRUCTIONS_KEY).or_else(|| {
        events
            .iter()
            .filter(|e| e.name == "gen_ai.client.inference.operation.details")
            .find_map(|e| find(&e.attributes, SYSTEM_INSTRUCTIONS_KEY))
    });
    if let Some(t) = explicit.and_then(instructions_text) {
        system.push(t);
    }
    let mut tool_results = Vec::new();
    for m in input_messages(attrs, events) {
        match m.role.as_str() {
            "system" | "developer" => system.push(m.text),
            "tool" | "function" => tool_results.push((m.tool_call_id, m.text)),
            _ => {}
        }
    }
    PromptContext {
        system_instructions: (!system.is_empty()).then(|| system.join("\n")),
        tool_results,
    }
}

/// Whether the span's input holds a tool result (cheap enough for ingest: only spans with
/// input messages are parsed).
pub fn has_tool_results(attrs: &Attributes, events: &[SpanEvent]) -> bool {
    let may = attrs.iter().any(|(k, _)| {
        k == INPUT_MESSAGES_KEY
            || k.starts_with("llm.input_messages.")
            || k.starts_with("gen_ai.prompt.")
            || k == "input.value"
    }) || events.iter().any(|e| {
        e.name == "gen_ai.tool.message" || e.name == "gen_ai.client.inference.operation.details"
    });
    may && !prompt_context(attrs, events).tool_results.is_empty()
}

/// A tool span's result: (tool name or call id, text), when the span is a tool execution
/// that recorded one. `operation` is the span's promoted `gen_ai.operation.name` (ingest
/// moves the attribute into its column).
pub fn tool_span_result(attrs: &Attributes, operation: Option<&str>) -> Option<(String, String)> {
    let is_tool = operation.or_else(|| str_of(find(attrs, "gen_ai.operation.name")))
        == Some("execute_tool")
        || is_openinference(attrs, "TOOL");
    if !is_tool {
        return None;
    }
    let result = match find(attrs, "gen_ai.tool.call.result") {
        Some(AttrValue::Str(s)) => s.clone(),
        Some(v @ (AttrValue::Array(_) | AttrValue::KvList(_))) => v.to_json().to_string(),
        _ => str_of(find(attrs, "output.value"))?.to_owned(),
    };
    if result.trim().is_empty() {
        return None;
    }
    let name = str_of(find(attrs, "gen_ai.tool.name"))
        .or_else(|| str_of(find(attrs, "tool.name")))
        .or_else(|| str_of(find(attrs, "gen_ai.tool.call.id")))
        .unwrap_or("tool");
    Some((name.to_owned(), result))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use sightline_storage::UnixNanos;

    fn s(v: &str) -> AttrValue {
        AttrValue::Str(v.into())
    }

    fn event(name: &str, attrs: Vec<(&str, AttrValue)>) -> SpanEvent {
        SpanEvent {
            time: UnixNanos(1),
            name: name.into(),
            attributes: attrs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        }
    }

    #[test]
    fn semconv_input_messages_with_a_tool_response() {
        // As opentelemetry-instrumentation-openai-v2 2.4b0 writes them (latest conventions).
        let a: Attributes = vec![(
            INPUT_MESSAGES_KEY.into(),
            s(
                r#"[{"role":"system","parts":[{"content":"Context: A","type":"text"}]},{"role":"user","parts":[{"content":"Q?","type":"text"}]},{"role":"tool","parts":[{"response":"tool out","id":"call_1","type":"tool_call_response"}]}]"#,
            ),
        )];
        let m = input_messages(&a, &[]);
        assert_eq!(m.len(), 3);
        assert_eq!((m[1].role.as_str(), m[1].text.as_str()), ("user", "Q?"));
        let c = prompt_context(&a, &[]);
        assert_eq!(c.system_instructions.as_deref(), Some("Context: A"));
        assert_eq!(
            c.tool_results,
            vec![(Some("call_1".to_owned()), "tool out".to_owned())]
        );
        assert!(has_tool_results(&a, &[]));
    }

    #[test]
    fn system_instructions_attribute_and_structured_values() {
        let a: Attributes = vec![(
            SYSTEM_INSTRUCTIONS_KEY.into(),
            s(r#"[{"type":"text","content":"Be brief."}]"#),
        )];
        assert_eq!(
            prompt_context(&a, &[]).system_instructions.as_deref(),
            Some("Be brief.")
        );
        // The same messages sent as a structured OTLP value (a log record's attribute).
        let structured = AttrValue::Array(vec![AttrValue::KvList(vec![
            ("role".into(), s("system")),
            (
                "parts".into(),
                AttrValue::Array(vec![AttrValue::KvList(vec![
                    ("type".into(), s("text")),
                    ("content".into(), s("Use the docs.")),
                ])]),
            ),
        ])]);
        let ev = event(
            "gen_ai.client.inference.operation.details",
            vec![(INPUT_MESSAGES_KEY, structured)],
        );
        assert_eq!(
            prompt_context(&Vec::new(), &[ev])
                .system_instructions
                .as_deref(),
            Some("Use the docs.")
        );
    }

    #[test]
    fn openinference_and_openllmetry_flattened_messages() {
        let oi: Attributes = vec![
            ("llm.input_messages.1.message.role".into(), s("tool")),
            ("llm.input_messages.1.message.content".into(), s("42 °C")),
            (
                "llm.input_messages.1.message.tool_call_id".into(),
                s("call_9"),
            ),
            ("llm.input_messages.0.message.role".into(), s("system")),
            (
                "llm.input_messages.0.message.contents.0.message_content.text".into(),
                s("You answer from tools."),
            ),
        ];
        let c = prompt_context(&oi, &[]);
        assert_eq!(
            c.system_instructions.as_deref(),
            Some("You answer from tools.")
        );
        assert_eq!(
            c.tool_results,
            vec![(Some("call_9".to_owned()), "42 °C".to_owned())]
        );
        let ol: Attributes = vec![
            ("gen_ai.prompt.0.role".into(), s("system")),
            ("gen_ai.prompt.0.content".into(), s("Rules.")),
            ("gen_ai.prompt.1.role".into(), s("user")),
            ("gen_ai.prompt.1.content".into(), s("Hi")),
        ];
        let m = input_messages(&ol, &[]);
        assert_eq!(m.len(), 2);
        assert_eq!(
            prompt_context(&ol, &[]).system_instructions.as_deref(),
            Some("Rules.")
        );
        assert!(!has_tool_results(&ol, &[]));
    }

    #[test]
    fn legacy_message_events() {
        // semconv 1.28-1.36 events, as openai-v2's legacy path emits them (the body's fields
        // become the event's attributes when the event arrives as a log record).
        let events = [
            event("gen_ai.system.message", vec![("content", s("Docs: X"))]),
            event("gen_ai.user.message", vec![("content", s("Q"))]),
            event(
                "gen_ai.tool.message",
                vec![("content", s("result")), ("id", s("call_2"))],
            ),
        ];
        let c = prompt_context(&Vec::new(), &events);
        assert_eq!(c.system_instructions.as_deref(), Some("Docs: X"));
        assert_eq!(
            c.tool_results,
            vec![(Some("call_2".to_owned()), "result".to_owned())]
        );
    }

    #[test]
    fn openinference_input_value_messages() {
        let a: Attributes = vec![
            ("openinference.span.kind".into(), s("LLM")),
            (
                "input.value".into(),
                s(
                    r#"{"messages":[{"role":"system","content":"Sys"},{"role":"user","content":[{"type":"text","text":"Q"}]}],"model":"gpt-4o"}"#,
                ),
            ),
        ];
        let m = input_messages(&a, &[]);
        assert_eq!(m.len(), 2);
        assert_eq!(m[1].text, "Q");
    }

    #[test]
    fn tool_spans() {
        let semconv: Attributes = vec![
            ("gen_ai.operation.name".into(), s("execute_tool")),
            ("gen_ai.tool.name".into(), s("weather")),
            ("gen_ai.tool.call.result".into(), s("Sunny, 21 °C")),
        ];
        assert_eq!(
            tool_span_result(&semconv, None),
            Some(("weather".to_owned(), "Sunny, 21 °C".to_owned()))
        );
        // As stored: the operation in its column, not in the attributes.
        let stored: Attributes = semconv[1..].to_vec();
        assert_eq!(tool_span_result(&stored, None), None);
        assert!(tool_span_result(&stored, Some("execute_tool")).is_some());
        let oi: Attributes = vec![
            ("openinference.span.kind".into(), s("TOOL")),
            ("tool.name".into(), s("search")),
            ("output.value".into(), s("found")),
        ];
        assert_eq!(
            tool_span_result(&oi, None),
            Some(("search".to_owned(), "found".to_owned()))
        );
        let chat: Attributes = vec![("gen_ai.operation.name".into(), s("chat"))];
        assert_eq!(tool_span_result(&chat, Some("chat")), None);
    }
}
