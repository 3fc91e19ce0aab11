//! GenAI events that arrive as log records correlated to their span (openai-v2 with
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=EVENT_ONLY`, OpenLIT, the semconv
//! 1.28-1.36 message events), read as the span events they stand for, so that
//! [`super::content`] and [`super::prompt`] read them like events on the span.
//!
//! A log record is a GenAI event when its event name (the OTLP `event_name` field, else the
//! `event.name` attribute of older SDKs) starts with `gen_ai.`. The event's attributes are the
//! record's attributes, then the fields of a structured body (semconv 1.28-1.36 events put
//! `content`, `message`, `id`, `tool_calls` there); a string body becomes `content`.

use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value::Value};
use sightline_storage::{AttrValue, LogRecord, SpanEvent};

use super::content::find;

/// The log attribute older SDKs name the event with.
const EVENT_NAME_ATTRIBUTE: &str = "event.name";

/// The GenAI event name of a log record, if it is one.
pub fn genai_event_name(log: &LogRecord) -> Option<&str> {
    let name = if log.event_name.is_empty() {
        match find(&log.attributes, EVENT_NAME_ATTRIBUTE) {
            Some(AttrValue::Str(s)) => s.as_str(),
            _ => return None,
        }
    } else {
        log.event_name.as_str()
    };
    name.starts_with("gen_ai.").then_some(name)
}

/// Whether an OTLP log record, before conversion, is a GenAI event: the same rule as
/// [`genai_event_name`] over its `event_name` field and its attributes (the last string
/// `event.name`, as conversion keeps the last of duplicate keys).
pub fn is_genai_otlp_event(event_name: &str, attributes: &[KeyValue]) -> bool {
    let name = if event_name.is_empty() {
        match attributes
            .iter()
            .rev()
            .find(|kv| kv.key == EVENT_NAME_ATTRIBUTE)
            .and_then(|kv| kv.value.as_ref())
            .and_then(|v| v.value.as_ref())
        {
            Some(Value::StringValue(s)) => s.as_str(),
            _ => return false,
        }
    } else {
        event_name
    };
    name.starts_with("gen_ai.")
}

/// The span event a GenAI log record stands for (see the module docs), or `None` for any
/// other record.
pub fn log_event(log: &LogRecord) -> Option<SpanEvent> {
    let name = genai_event_name(log)?.to_owned();
    let mut attributes: Vec<(String, AttrValue)> = log
        .attributes
        .iter()
        .filter(|(k, _)| k != EVENT_NAME_ATTRIBUTE)
        .cloned()
        .collect();
    match &log.body {
        AttrValue::KvList(fields) => {
            for (k, v) in fields {
                if !attributes.iter().any(|(a, _)| a == k) {
                    attributes.push((k.clone(), v.clone()));
                }
            }
        }
        AttrValue::Str(s) if !s.is_empty() => {
            attributes.push(("content".into(), AttrValue::Str(s.clone())));
        }
        _ => {}
    }
    Some(SpanEvent {
        time: log.time,
        name,
        attributes,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::otlp::genai::answer_text;
    use crate::otlp::genai::prompt::prompt_context;
    use sightline_storage::UnixNanos;

    fn s(v: &str) -> AttrValue {
        AttrValue::Str(v.into())
    }

    fn log(event_name: &str, attributes: Vec<(&str, AttrValue)>, body: AttrValue) -> LogRecord {
        LogRecord {
            time: UnixNanos(5),
            observed_time: UnixNanos(5),
            severity_number: 9,
            severity_text: String::new(),
            body,
            trace_id: None,
            span_id: None,
            flags: 0,
            service_name: "svc".into(),
            scope_name: "opentelemetry.instrumentation.openai_v2".into(),
            event_name: event_name.into(),
            resource_attributes: Vec::new(),
            attributes: attributes
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
        }
    }

    #[test]
    fn operation_details_records_give_answer_and_prompt() {
        // openai-v2 2.4b0 with the latest conventions and EVENT_ONLY: structured attributes.
        let output = AttrValue::Array(vec![AttrValue::KvList(vec![
            ("role".into(), s("assistant")),
            (
                "parts".into(),
                AttrValue::Array(vec![AttrValue::KvList(vec![
                    ("content".into(), s("Paris.")),
                    ("type".into(), s("text")),
                ])]),
            ),
        ])]);
        let input = AttrValue::Array(vec![AttrValue::KvList(vec![
            ("role".into(), s("system")),
            (
                "parts".into(),
                AttrValue::Array(vec![AttrValue::KvList(vec![
                    ("content".into(), s("Context: Paris is in France.")),
                    ("type".into(), s("text")),
                ])]),
            ),
        ])]);
        let r = log(
            "gen_ai.client.inference.operation.details",
            vec![
                ("gen_ai.output.messages", output),
                ("gen_ai.input.messages", input),
            ],
            AttrValue::Str(String::new()),
        );
        let e = log_event(&r).unwrap();
        assert_eq!(
            answer_text(&Vec::new(), std::slice::from_ref(&e)).as_deref(),
            Some("Paris.")
        );
        assert_eq!(
            prompt_context(&Vec::new(), &[e])
                .system_instructions
                .as_deref(),
            Some("Context: Paris is in France.")
        );
    }

    #[test]
    fn legacy_events_read_their_body() {
        // semconv 1.28-1.36: the event name in the `event.name` attribute (older SDKs) and
        // the content in the body.
        let choice = log(
            "",
            vec![("event.name", s("gen_ai.choice"))],
            AttrValue::KvList(vec![
                ("index".into(), AttrValue::Int(0)),
                ("finish_reason".into(), s("stop")),
                (
                    "message".into(),
                    AttrValue::KvList(vec![
                        ("role".into(), s("assistant")),
                        ("content".into(), s("It is 330 metres tall.")),
                    ]),
                ),
            ]),
        );
        let e = log_event(&choice).unwrap();
        assert_eq!(e.name, "gen_ai.choice");
        assert!(!e.attributes.iter().any(|(k, _)| k == "event.name"));
        assert_eq!(
            answer_text(&Vec::new(), &[e]).as_deref(),
            Some("It is 330 metres tall.")
        );
        let system = log(
            "gen_ai.system.message",
            vec![("gen_ai.system", s("openai"))],
            AttrValue::KvList(vec![("content".into(), s("Docs: X"))]),
        );
        let e = log_event(&system).unwrap();
        assert_eq!(
            prompt_context(&Vec::new(), &[e])
                .system_instructions
                .as_deref(),
            Some("Docs: X")
        );
        // Not a GenAI event.
        let other = log("app.request", Vec::new(), s("GET /"));
        assert!(log_event(&other).is_none());
        assert!(log_event(&log("", Vec::new(), s("plain line"))).is_none());
    }
}
