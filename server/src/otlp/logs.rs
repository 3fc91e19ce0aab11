//! OTLP log records to [`LogRecord`]s.
//!
//! Timestamps: `observed_time_unix_nano` of zero becomes the server's receive time;
//! `time_unix_nano` of zero becomes the observed time. Either more than `max_future_skew_secs`
//! ahead rejects the record. Trace correlation: empty or all-zero ids mean "not correlated";
//! ids of the wrong length reject the record. The body keeps its type (string, or a
//! structured value stored as JSON text); its string/bytes values count against
//! `max_attribute_value_bytes`.
//!
//! A GenAI event record (see [`super::genai::log_events`]) carries LLM content: its
//! content-key attributes (`gen_ai.input.messages`, `gen_ai.output.messages`, ...) and its
//! whole body (semconv 1.28-1.36 events put `content` / `message` there) share one
//! [`ContentBudget`] of `max_content_bytes_per_span` instead of the per-value limit; past it
//! a value is cut and its key (`body` for the body) listed in `sightline.truncated_attributes`,
//! and the record is counted as truncated.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::logs::v1::LogRecord as OtlpLog;
use sightline_storage::{AttrValue, LogRecord, SpanId, TraceId};

use super::attributes::{
    ContentBudget, ResourceInfo, TRUNCATED_KEY, check_scope_attributes, convert_attributes,
    convert_content_value, convert_resource, convert_span_attributes, convert_value,
};
use super::genai::log_events::is_genai_otlp_event;
use super::{ItemError, MapContext, Mapped, RejectReason};

/// The name a truncated body is listed under in `sightline.truncated_attributes`.
const BODY_KEY: &str = "body";

/// Number of log records in a request.
pub fn count_logs(req: &ExportLogsServiceRequest) -> usize {
    req.resource_logs
        .iter()
        .flat_map(|r| &r.scope_logs)
        .map(|s| s.log_records.len())
        .sum()
}

fn optional_id<T>(
    bytes: &[u8],
    len: usize,
    what: &str,
    parse: impl Fn(&[u8]) -> sightline_storage::Result<T>,
) -> Result<Option<T>, ItemError> {
    if bytes.is_empty() || (bytes.len() == len && bytes.iter().all(|b| *b == 0)) {
        return Ok(None);
    }
    parse(bytes)
        .map(Some)
        .map_err(|e| ItemError::new(RejectReason::InvalidId, format!("{what}: {e}")))
}

/// One record; `true` with it when its LLM content was truncated.
fn map_log(
    r: &OtlpLog,
    resource: &ResourceInfo,
    scope_name: &str,
    ctx: &MapContext,
) -> Result<(LogRecord, bool), ItemError> {
    let observed_time = if r.observed_time_unix_nano == 0 {
        ctx.now
    } else {
        ctx.timestamp("observed_time_unix_nano", r.observed_time_unix_nano)?
    };
    let time = if r.time_unix_nano == 0 {
        observed_time
    } else {
        ctx.timestamp("time_unix_nano", r.time_unix_nano)?
    };
    let trace_id = optional_id(&r.trace_id, TraceId::LEN, "trace id", TraceId::from_slice)?;
    let span_id = optional_id(&r.span_id, SpanId::LEN, "span id", SpanId::from_slice)?;
    let limits = &ctx.limits;
    let (body, attributes, truncated) = if is_genai_otlp_event(&r.event_name, &r.attributes) {
        let mut content = ContentBudget::new(limits.max_content_bytes_per_span);
        let body = convert_content_value(r.body.as_ref(), BODY_KEY, limits, &mut content)?;
        let mut attributes = convert_span_attributes(&r.attributes, limits, &mut content)?;
        let truncated = !content.truncated.is_empty();
        if truncated {
            let keys = std::mem::take(&mut content.truncated);
            attributes.push((
                TRUNCATED_KEY.to_owned(),
                AttrValue::Array(keys.into_iter().map(AttrValue::Str).collect()),
            ));
        }
        (body, attributes, truncated)
    } else {
        let body = convert_value(r.body.as_ref(), BODY_KEY, limits, 0)?;
        (body, convert_attributes(&r.attributes, limits)?, false)
    };
    let rec = LogRecord {
        time,
        observed_time,
        severity_number: r.severity_number,
        severity_text: r.severity_text.clone(),
        body,
        trace_id,
        span_id,
        flags: r.flags,
        service_name: resource.service_name.clone(),
        scope_name: scope_name.to_owned(),
        event_name: r.event_name.clone(),
        resource_attributes: resource.attributes.clone(),
        attributes,
    };
    Ok((rec, truncated))
}

/// Maps a request's log records; rejected records are counted, not returned.
pub fn map_logs(req: &ExportLogsServiceRequest, ctx: &MapContext) -> Mapped<Vec<LogRecord>> {
    let mut out = Mapped::<Vec<LogRecord>> {
        rows: Vec::with_capacity(count_logs(req)),
        ..Mapped::default()
    };
    for rl in &req.resource_logs {
        let resource = match convert_resource(rl.resource.as_ref(), &ctx.limits) {
            Ok(r) => r,
            Err(e) => {
                for _ in rl.scope_logs.iter().flat_map(|s| &s.log_records) {
                    out.reject(ItemError::new(e.reason, format!("resource: {}", e.message)));
                }
                continue;
            }
        };
        for sl in &rl.scope_logs {
            let scope = sl.scope.as_ref();
            if let Some(Err(e)) =
                scope.map(|sc| check_scope_attributes(&sc.attributes, &ctx.limits))
            {
                for _ in &sl.log_records {
                    out.reject(ItemError::new(e.reason, format!("scope: {}", e.message)));
                }
                continue;
            }
            let scope_name = scope.map_or("", |s| s.name.as_str());
            for r in &sl.log_records {
                match map_log(r, &resource, scope_name, ctx) {
                    Ok((rec, truncated)) => {
                        out.accepted += 1;
                        out.truncated += u64::from(truncated);
                        out.rows.push(rec);
                    }
                    Err(e) => out.reject(e),
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use opentelemetry_proto::tonic::common::v1::{
        AnyValue, ArrayValue, KeyValue, KeyValueList, any_value::Value,
    };
    use opentelemetry_proto::tonic::logs::v1::{ResourceLogs, ScopeLogs};

    fn any(v: Value) -> AnyValue {
        AnyValue { value: Some(v) }
    }

    fn kv(k: &str, v: Value) -> KeyValue {
        KeyValue {
            key: k.into(),
            value: Some(any(v)),
            ..Default::default()
        }
    }

    fn str(s: &str) -> Value {
        Value::StringValue(s.into())
    }

    fn kvlist(kvs: Vec<KeyValue>) -> Value {
        Value::KvlistValue(KeyValueList { values: kvs })
    }

    /// `gen_ai.output.messages` as openai-v2 sends it with the latest conventions.
    fn output_messages(answer: &str) -> KeyValue {
        let part = kvlist(vec![kv("type", str("text")), kv("content", str(answer))]);
        let message = kvlist(vec![
            kv("role", str("assistant")),
            kv(
                "parts",
                Value::ArrayValue(ArrayValue {
                    values: vec![any(part)],
                }),
            ),
        ]);
        kv(
            "gen_ai.output.messages",
            Value::ArrayValue(ArrayValue {
                values: vec![any(message)],
            }),
        )
    }

    fn record(event_name: &str, attributes: Vec<KeyValue>, body: Option<Value>) -> OtlpLog {
        OtlpLog {
            event_name: event_name.into(),
            attributes,
            body: body.map(any),
            ..Default::default()
        }
    }

    fn map_one(r: OtlpLog) -> Mapped<Vec<LogRecord>> {
        let req = ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                scope_logs: vec![ScopeLogs {
                    log_records: vec![r],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        map_logs(
            &req,
            &MapContext::at(&Limits::default(), sightline_query::time::now()),
        )
    }

    fn attr<'a>(rec: &'a LogRecord, key: &str) -> Option<&'a AttrValue> {
        rec.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// The answer string inside stored `gen_ai.output.messages`.
    fn stored_answer(rec: &LogRecord) -> &str {
        let Some(AttrValue::Array(msgs)) = attr(rec, "gen_ai.output.messages") else {
            panic!("no messages: {:?}", rec.attributes)
        };
        let AttrValue::KvList(m) = &msgs[0] else {
            panic!("not a kvlist")
        };
        let AttrValue::Array(parts) = &m[1].1 else {
            panic!("no parts")
        };
        let AttrValue::KvList(p) = &parts[0] else {
            panic!("not a kvlist")
        };
        let AttrValue::Str(s) = &p[1].1 else {
            panic!("not a string")
        };
        s
    }

    const DETAILS: &str = "gen_ai.client.inference.operation.details";

    #[test]
    fn genai_records_keep_long_structured_content_up_to_the_budget() {
        let budget = Limits::default().max_content_bytes_per_span;
        let three = "a".repeat(3 << 20);
        let out = map_one(record(DETAILS, vec![output_messages(&three)], None));
        assert_eq!((out.accepted, out.rejected, out.truncated), (1, 0, 0));
        let rec = &out.rows[0];
        assert_eq!(stored_answer(rec), three);
        assert!(attr(rec, TRUNCATED_KEY).is_none());
        assert!(out.error_message().is_empty());

        let five = "b".repeat(5 << 20);
        let out = map_one(record(DETAILS, vec![output_messages(&five)], None));
        assert_eq!((out.accepted, out.rejected, out.truncated), (1, 0, 1));
        let rec = &out.rows[0];
        // "assistant" and "text" were charged first.
        assert_eq!(
            stored_answer(rec).len(),
            budget - "assistant".len() - "text".len()
        );
        assert_eq!(
            attr(rec, TRUNCATED_KEY),
            Some(&AttrValue::Array(vec![AttrValue::Str(
                "gen_ai.output.messages".into()
            )]))
        );
        assert!(
            out.error_message().contains("truncated"),
            "{}",
            out.error_message()
        );
    }

    #[test]
    fn legacy_genai_bodies_are_content_and_listed_as_body() {
        // semconv 1.28-1.36: the name in the `event.name` attribute, the answer in the body.
        let body = |answer: &str| {
            kvlist(vec![
                kv("index", Value::IntValue(0)),
                kv("finish_reason", str("stop")),
                kv(
                    "message",
                    kvlist(vec![
                        kv("role", str("assistant")),
                        kv("content", str(answer)),
                    ]),
                ),
            ])
        };
        let name = vec![kv("event.name", str("gen_ai.choice"))];
        let long = "c".repeat(300 << 10);
        let out = map_one(record("", name.clone(), Some(body(&long))));
        assert_eq!((out.accepted, out.rejected, out.truncated), (1, 0, 0));
        let AttrValue::KvList(fields) = &out.rows[0].body else {
            panic!("body: {:?}", out.rows[0].body)
        };
        let Some((_, AttrValue::KvList(message))) = fields.iter().find(|(k, _)| k == "message")
        else {
            panic!("no message")
        };
        assert_eq!(message[1].1, AttrValue::Str(long));
        // Over the budget: cut, and the body is named.
        let huge = "d".repeat(5 << 20);
        let out = map_one(record("", name, Some(body(&huge))));
        assert_eq!((out.accepted, out.rejected, out.truncated), (1, 0, 1));
        assert_eq!(
            attr(&out.rows[0], TRUNCATED_KEY),
            Some(&AttrValue::Array(vec![AttrValue::Str("body".into())]))
        );
    }

    #[test]
    fn other_records_keep_the_per_value_limit() {
        let long = "e".repeat(300 << 10);
        for r in [
            record("app.request", vec![kv("message", str(&long))], None),
            record("", vec![kv("gen_ai.output.messages", str(&long))], None),
            record("app.request", Vec::new(), Some(str(&long))),
        ] {
            let out = map_one(r);
            assert_eq!((out.accepted, out.rejected, out.truncated), (0, 1, 0));
            assert_eq!(out.reasons, vec![(RejectReason::ValueTooLong, 1)]);
        }
        // Non-content attributes of a GenAI record too.
        let out = map_one(record(DETAILS, vec![kv("app.payload", str(&long))], None));
        assert_eq!((out.accepted, out.rejected), (0, 1));
    }
}
