//! Long LLM content in GenAI log records against the real binary: structured
//! `gen_ai.output.messages` (openai-v2 with the latest conventions) and semconv 1.28-1.36
//! bodies are held to the per-record content budget (`max_content_bytes_per_span`, 4 MiB),
//! not to the 256 KiB per-value limit: kept whole under it, cut past it with the record
//! marked, the response saying so and `/metrics` counting it; other records keep the
//! per-value limit.

use serde_json::{Value, json};

use crate::common::{ServerProcess, http};

const JSON: (&str, &str) = ("Content-Type", "application/json");

fn now_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn s(v: &str) -> Value {
    json!({ "stringValue": v })
}

fn kvlist(fields: &[(&str, Value)]) -> Value {
    let values: Vec<Value> = fields
        .iter()
        .map(|(k, v)| json!({"key": k, "value": v}))
        .collect();
    json!({ "kvlistValue": { "values": values } })
}

/// `gen_ai.output.messages` as openai-v2 sends it: `[{role, parts: [{type, content}]}]`.
fn output_messages(answer: &str) -> Value {
    let part = kvlist(&[("type", s("text")), ("content", s(answer))]);
    let message = kvlist(&[
        ("role", s("assistant")),
        ("parts", json!({ "arrayValue": { "values": [part] } })),
    ]);
    json!({ "arrayValue": { "values": [message] } })
}

/// One log record correlated to `trace`, as an OTLP/JSON request.
fn one_log(trace: &str, event_name: &str, attributes: Value, body: Option<Value>) -> Vec<u8> {
    let mut record = json!({
        "timeUnixNano": now_nanos().to_string(),
        "traceId": trace,
        "spanId": "00000000000000c1",
        "eventName": event_name,
        "attributes": attributes,
    });
    if let Some(b) = body {
        record["body"] = b;
    }
    json!({"resourceLogs": [{
        "resource": {"attributes": [{"key": "service.name", "value": s("chat")}]},
        "scopeLogs": [{"scope": {"name": "opentelemetry.instrumentation.openai_v2"},
                       "logRecords": [record]}]
    }]})
    .to_string()
    .into_bytes()
}

fn post(s: &ServerProcess, body: &[u8]) -> (u16, Value) {
    let r = http(s.http, "POST", "/v1/logs", &[JSON], body).unwrap();
    let v = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
    (r.status, v)
}

/// The one stored record of `trace`, from the native log search API.
fn stored(s: &ServerProcess, trace: &str) -> Value {
    let path = format!("/api/v1/logs/search?trace_id={trace}");
    let r = http(s.http, "GET", &path, &[], b"").unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    let lines = v["data"]["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 1, "{trace}: {} lines", lines.len());
    lines[0].clone()
}

/// The answer inside stored `gen_ai.output.messages`.
fn stored_answer(line: &Value) -> String {
    let msgs = &line["attributes"]["gen_ai.output.messages"];
    msgs[0]["parts"][0]["content"]
        .as_str()
        .unwrap_or_else(|| {
            panic!(
                "no answer in {:?}",
                line["attributes"]
                    .as_object()
                    .map(|o| o.keys().collect::<Vec<_>>())
            )
        })
        .to_owned()
}

fn truncated_logs(s: &ServerProcess) -> Option<String> {
    let metrics = http(s.http, "GET", "/metrics", &[], b"").unwrap().text();
    metrics
        .lines()
        .find(|l| l.starts_with("sightline_ingest_truncated_items_total{signal=\"logs\"}"))
        .map(str::to_owned)
}

#[test]
fn genai_log_records_keep_long_structured_answers_or_truncate_them() {
    let dir = tempfile::tempdir().unwrap();
    let srv = ServerProcess::start(&dir.path().join("data"), &[], dir.path().join("server.log"));
    let details = "gen_ai.client.inference.operation.details";

    // 3 MiB nested in the messages: over the per-value limit, kept whole.
    let trace3 = "3333333333333333333333333333333a";
    let three = "The Eiffel Tower is 330 metres tall. ".repeat((3 << 20) / 37 + 1);
    let attrs = json!([{"key": "gen_ai.output.messages", "value": output_messages(&three)}]);
    let (status, resp) = post(&srv, &one_log(trace3, details, attrs, None));
    assert_eq!(status, 200, "{resp}");
    assert!(resp.get("partialSuccess").is_none(), "{resp}");
    let line = stored(&srv, trace3);
    assert_eq!(stored_answer(&line), three);
    assert!(line["attributes"]["sightline.truncated_attributes"].is_null());
    assert_eq!(truncated_logs(&srv), None);

    // 5 MiB: cut to the 4 MiB budget ("assistant" and "text" were charged first).
    let trace5 = "5555555555555555555555555555555a";
    let five = "The Eiffel Tower is 330 metres tall. ".repeat((5 << 20) / 37 + 1);
    let attrs = json!([{"key": "gen_ai.output.messages", "value": output_messages(&five)}]);
    let (status, resp) = post(&srv, &one_log(trace5, details, attrs, None));
    assert_eq!(status, 200, "{resp}");
    let ps = &resp["partialSuccess"];
    assert_eq!(ps["rejectedLogRecords"], json!("0"), "{resp}");
    let message = ps["errorMessage"].as_str().unwrap();
    assert!(
        message.contains("truncated") && message.contains("max_content_bytes_per_span"),
        "{resp}"
    );
    let line = stored(&srv, trace5);
    let answer = stored_answer(&line);
    assert_eq!(answer.len(), (4 << 20) - "assistant".len() - "text".len());
    assert!(five.starts_with(&answer));
    assert_eq!(
        line["attributes"]["sightline.truncated_attributes"],
        json!(["gen_ai.output.messages"])
    );
    assert_eq!(
        truncated_logs(&srv).as_deref(),
        Some("sightline_ingest_truncated_items_total{signal=\"logs\"} 1")
    );

    // A semconv 1.28-1.36 `gen_ai.choice` (named by the `event.name` attribute) with a
    // 300 KiB answer in its body: kept.
    let trace_choice = "cccccccccccccccccccccccccccccccc";
    let long = "a".repeat(300 << 10);
    let body = kvlist(&[
        ("index", json!({"intValue": "0"})),
        (
            "message",
            kvlist(&[("role", s("assistant")), ("content", s(&long))]),
        ),
    ]);
    let attrs = json!([{"key": "event.name", "value": s("gen_ai.choice")}]);
    let (status, resp) = post(&srv, &one_log(trace_choice, "", attrs, Some(body)));
    assert_eq!(status, 200, "{resp}");
    assert!(resp.get("partialSuccess").is_none(), "{resp}");
    let line = stored(&srv, trace_choice);
    assert_eq!(
        line["body"]["message"]["content"].as_str(),
        Some(long.as_str())
    );

    // Any other record keeps the per-value limit: rejected whole.
    let trace_other = "dddddddddddddddddddddddddddddddd";
    let attrs = json!([{"key": "gen_ai.output.messages", "value": s(&long)}]);
    let (status, resp) = post(&srv, &one_log(trace_other, "app.request", attrs, None));
    assert_eq!(status, 400, "{resp}");
    assert_eq!(
        truncated_logs(&srv).as_deref(),
        Some("sightline_ingest_truncated_items_total{signal=\"logs\"} 1")
    );
}
