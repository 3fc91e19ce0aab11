//! LLM analytics from real instrumentation: the `openai` Python SDK instrumented by
//! `openinference-instrumentation-openai`, by `opentelemetry-instrumentation-openai-v2`, by
//! OpenLLMetry's `opentelemetry-instrumentation-openai` and by OpenLIT, unmodified, exporting OTLP/HTTP to the real binary, against a deterministic fake
//! OpenAI-compatible server on loopback (`cli/tests/python/fake_openai.py`).
//!
//! Per library: the LLM spans are found by model with provider and operation set; where the
//! library records logprobs (OpenInference, inside `output.value`) the entropy columns equal
//! the values computed here from the logprobs the SDK received (1e-9) and the tokens view
//! returns every token; where it records none (openai-v2, OpenLLMetry, OpenLIT), the quality API says so
//! and points at the docs, and `clients/python/sightline_logprobs.py` fills them in.

use std::process::Command;

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, trace_service_client::TraceServiceClient,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use serde_json::Value;

use crate::common::{ServerProcess, http, openlit_python, python};

/// One call as the client script reports it.
pub(crate) struct Call {
    pub(crate) trace_id: String,
    pub(crate) span_id: String,
    pub(crate) answer: String,
    /// Per token: (token, sampled logprob, alternatives' logprobs).
    tokens: Vec<(String, f64, Vec<f64>)>,
}

pub(crate) fn run_client(py: &std::path::Path, library: &str, s: &ServerProcess) -> Vec<Call> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/llm_client.py");
    let out = Command::new(py)
        .arg(script)
        .arg(library)
        .arg(format!("http://{}", s.http))
        .output()
        .expect("run the client script");
    assert!(
        out.status.success(),
        "{library} client failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("client report");
    report["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| Call {
            trace_id: c["trace_id"].as_str().unwrap().to_owned(),
            span_id: c["span_id"].as_str().unwrap().to_owned(),
            answer: c["answer"].as_str().unwrap().to_owned(),
            tokens: c["logprobs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    (
                        t["token"].as_str().unwrap().to_owned(),
                        t["logprob"].as_f64().unwrap(),
                        t["top"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|x| x.as_f64().unwrap())
                            .collect(),
                    )
                })
                .collect(),
        })
        .collect()
}

/// Entropy in nats of one position whose alternatives are the whole distribution (the fake
/// server's alternatives sum to 1): `-sum q ln q`, `q = p / sum p`.
fn entropy(top: &[f64]) -> f64 {
    let p: Vec<f64> = top.iter().map(|l| l.exp()).collect();
    let sum: f64 = p.iter().sum();
    assert!((sum - 1.0).abs() < 1e-9, "alternatives sum to {sum}");
    -p.iter().map(|&x| (x / sum) * (x / sum).ln()).sum::<f64>()
}

pub(crate) fn get_json(s: &ServerProcess, path: &str) -> Value {
    let r = http(s.http, "GET", path, &[], b"").unwrap();
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    serde_json::from_slice(&r.body).unwrap()
}

/// The stored span `call` names, from the trace view.
pub(crate) fn span_of(s: &ServerProcess, call: &Call) -> Value {
    let t = get_json(s, &format!("/api/v1/traces/{}", call.trace_id));
    t["data"]["spans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|sp| sp["span_id"] == call.span_id.as_str())
        .unwrap_or_else(|| panic!("span {} not in {t}", call.span_id))
        .clone()
}

pub(crate) fn server(dir: &std::path::Path) -> ServerProcess {
    ServerProcess::start(&dir.join("data"), &[], dir.join("server.log"))
}

#[test]
fn openinference_openai_spans_get_entropy_tokens_and_models() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path());
    let calls = run_client(&py, "openinference", &s);
    assert_eq!(calls.len(), 2);
    for call in &calls {
        let span = span_of(&s, call);
        assert_chat_columns(&span);
        assert_entropy_and_tokens(&s, call, &span);
    }
    // Found by the request model the application asked for, grouped by model.
    let series = get_json(
        &s,
        "/api/v1/quality?metric=token_entropy_mean&by=model&model=gpt-4o&step=1h",
    );
    let groups = series["series"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{series}");
    assert_eq!(groups[0]["group"], "gpt-4o", "{series}");
    // And by the dated model that answered (OpenInference's llm.model_name).
    let series = get_json(
        &s,
        "/api/v1/quality?metric=token_entropy_mean&by=model&model=gpt-4o-2024-08-06&step=1h",
    );
    assert_eq!(series["series"][0]["group"], "gpt-4o", "{series}");
    let found = get_json(
        &s,
        "/api/v1/traces/search?group=spans&model=gpt-4o-2024-08-06",
    );
    let mut spans: Vec<&str> = found["data"]["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|sp| sp["span_id"].as_str().unwrap())
        .collect();
    spans.sort_unstable();
    let mut want: Vec<&str> = calls.iter().map(|c| c.span_id.as_str()).collect();
    want.sort_unstable();
    assert_eq!(spans, want, "{found}");
}

/// The GenAI columns of a chat span of the fake server, whatever the library's dialect.
fn assert_chat_columns(span: &Value) {
    let g = &span["gen_ai"];
    assert_eq!(g["request_model"], "gpt-4o", "{span}");
    assert_eq!(g["response_model"], "gpt-4o-2024-08-06", "{span}");
    assert_eq!(g["provider_name"], "openai", "{span}");
    assert_eq!(g["operation_name"], "chat", "{span}");
}

/// The stored entropy columns equal those computed here from the logprobs the SDK received,
/// and the tokens view returns every token.
fn assert_entropy_and_tokens(s: &ServerProcess, call: &Call, span: &Value) {
    let q = &span["quality"];
    let h: Vec<f64> = call.tokens.iter().map(|(_, _, top)| entropy(top)).collect();
    let mean = h.iter().sum::<f64>() / h.len() as f64;
    let max = h.iter().copied().fold(f64::MIN, f64::max);
    let low = call
        .tokens
        .iter()
        .filter(|(_, lp, _)| lp.exp() < 0.5)
        .count();
    let got_mean = q["entropy_mean"].as_f64().expect("entropy_mean stored");
    let got_max = q["entropy_max"].as_f64().expect("entropy_max stored");
    assert!((got_mean - mean).abs() < 1e-9, "{got_mean} vs {mean}");
    assert!((got_max - max).abs() < 1e-9, "{got_max} vs {max}");
    assert_eq!(q["low_confidence_tokens"].as_u64(), Some(low as u64));
    // The tokens view returns every token, with its entropy.
    let view = get_json(
        s,
        &format!(
            "/api/v1/quality/tokens?trace_id={}&span_id={}",
            call.trace_id, call.span_id
        ),
    );
    let tokens = view["tokens"].as_array().unwrap();
    assert_eq!(tokens.len(), call.tokens.len());
    let text: String = tokens
        .iter()
        .map(|t| t["token"].as_str().unwrap())
        .collect();
    assert_eq!(text, call.answer);
    for (t, want) in tokens.iter().zip(&h) {
        let e = t["entropy"].as_f64().unwrap();
        assert!((e - want).abs() < 1e-9, "{e} vs {want}");
    }
}

#[test]
fn the_logprobs_hook_gives_openai_v2_spans_their_entropy() {
    let Some(py) = python() else { return };
    assert_hook_gives_entropy(&py, "openai-v2-logprobs");
}

#[test]
fn the_logprobs_hook_gives_openlit_spans_their_entropy() {
    let Some(py) = openlit_python() else { return };
    assert_hook_gives_entropy(&py, "openlit-logprobs");
}

/// With `clients/python/sightline_logprobs.py`, the spans of a library that records no
/// logprobs get the entropy columns and the tokens view.
fn assert_hook_gives_entropy(py: &std::path::Path, library: &str) {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path());
    let calls = run_client(py, library, &s);
    assert_eq!(calls.len(), 2);
    for call in &calls {
        let span = span_of(&s, call);
        assert_chat_columns(&span);
        assert_entropy_and_tokens(&s, call, &span);
    }
}

#[test]
fn openai_v2_spans_are_found_and_empty_quality_says_why() {
    let Some(py) = python() else { return };
    assert_found_and_empty_says_why(&py, "openai-v2");
}

#[test]
fn openllmetry_spans_are_found_and_empty_quality_says_why() {
    let Some(py) = python() else { return };
    assert_found_and_empty_says_why(&py, "openllmetry");
}

#[test]
fn the_logprobs_hook_gives_openllmetry_spans_their_entropy() {
    let Some(py) = python() else { return };
    assert_hook_gives_entropy(&py, "openllmetry-logprobs");
}

#[test]
fn openlit_spans_are_found_and_empty_quality_says_why() {
    let Some(py) = openlit_python() else { return };
    assert_found_and_empty_says_why(&py, "openlit");
}

/// A library that records no logprobs: its chat spans are found with their GenAI columns,
/// and the quality API says what is missing and where the docs are.
fn assert_found_and_empty_says_why(py: &std::path::Path, library: &str) {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path());
    let calls = run_client(py, library, &s);
    assert_eq!(calls.len(), 2);
    for call in &calls {
        let span = span_of(&s, call);
        assert_chat_columns(&span);
        assert!(span["quality"]["entropy_mean"].is_null(), "{span}");
        // The library records no logprobs: the tokens view says so.
        let r = http(
            s.http,
            "GET",
            &format!(
                "/api/v1/quality/tokens?trace_id={}&span_id={}",
                call.trace_id, call.span_id
            ),
            &[],
            b"",
        )
        .unwrap();
        assert_eq!(r.status, 404, "{}", r.text());
        assert!(r.text().contains("logprobs"), "{}", r.text());
    }
    let series = get_json(
        &s,
        "/api/v1/quality?metric=token_entropy_mean&by=model&step=1h",
    );
    assert_eq!(series["series"], Value::Array(vec![]), "{series}");
    let why = series["empty_reason"]
        .as_str()
        .expect("an empty answer says why");
    assert!(
        why.contains("2 LLM spans") && why.contains("logprobs"),
        "{why}"
    );
    assert!(
        series["docs"]
            .as_str()
            .is_some_and(|d| d.contains("llm-instrumentation.md")),
        "{series}"
    );
}

/// The evaluation span of `llm_span` in `trace`, waiting for the assembler (it evaluates a
/// trace once it has been quiet for the settle time).
pub(crate) fn evaluation_of(s: &ServerProcess, trace: &str, llm_span: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let t = get_json(s, &format!("/api/v1/traces/{trace}"));
        if let Some(e) = t["data"]["spans"]
            .as_array()
            .unwrap()
            .iter()
            .find(|sp| sp["name"] == "sightline.evaluation" && sp["parent_span_id"] == llm_span)
        {
            return e.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no evaluation of {llm_span} in {t}"
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

pub(crate) fn ids(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect();
    out.sort();
    out
}

#[test]
fn a_langchain_retriever_and_an_openai_call_are_assembled_into_a_hallucination_index() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path());
    let calls = run_client(&py, "openinference-rag", &s);
    assert_eq!(calls.len(), 2);
    let mut index = Vec::new();
    for call in &calls {
        let e = evaluation_of(&s, &call.trace_id, &call.span_id);
        let a = &e["attributes"];
        assert_eq!(
            ids(&a["sightline.evaluation.documents"]),
            ["eiffel", "louvre"]
        );
        assert_eq!(e["gen_ai"]["request_model"], "gpt-4o", "{e}");
        assert_eq!(e["service_name"], "rag-openinference-rag", "{e}");
        index.push((
            e["quality"]["hallucination_index"].as_f64().expect("index"),
            ids(&a["sightline.evaluation.supporting_documents"]),
            a["sightline.evaluation.unsupported_sentences"]
                .as_i64()
                .unwrap(),
            a["sightline.evaluation.evidence"]
                .as_str()
                .unwrap()
                .to_owned(),
        ));
        // The chat span keeps its own entropy columns.
        let span = span_of(&s, call);
        assert!(span["quality"]["entropy_mean"].is_f64(), "{span}");
    }
    let (grounded, contradicting) = (&index[0], &index[1]);
    assert!(
        grounded.0 < contradicting.0,
        "grounded {} vs contradicting {}",
        grounded.0,
        contradicting.0
    );
    assert_eq!(
        grounded.1,
        ["eiffel"],
        "the grounded answer is supported by eiffel"
    );
    assert_eq!(grounded.2, 0);
    assert!(
        contradicting.2 > 0,
        "the contradicting answer has unsupported sentences"
    );
    let ev: Value = serde_json::from_str(&grounded.3).unwrap();
    assert_eq!(ev[0]["best"]["document_id"], "eiffel", "{ev}");
    assert_eq!(ev[0]["supported"], true, "{ev}");
    // The quality API averages the index per model.
    let series = get_json(
        &s,
        "/api/v1/quality?metric=hallucination_index&by=model&model=gpt-4o&step=1h",
    );
    let groups = series["series"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{series}");
    // The counter moves once the store acknowledged the evaluations, just after they
    // became searchable.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let metrics = http(s.http, "GET", "/metrics", &[], b"").unwrap().text();
        if metrics.contains("sightline_assembly_evaluations_total 2") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{metrics}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }

    // Provenance: both answers had eiffel in their context; only the grounded one is
    // supported by it; only the contradicting one has unsupported sentences.
    let p = get_json(&s, "/api/v1/quality/provenance?document=eiffel");
    let answers = p["answers"].as_array().unwrap();
    let mut spans: Vec<&str> = answers
        .iter()
        .map(|a| a["span_id"].as_str().unwrap())
        .collect();
    spans.sort_unstable();
    let mut want = vec![calls[0].span_id.as_str(), calls[1].span_id.as_str()];
    want.sort_unstable();
    assert_eq!(spans, want, "{p}");
    let by_span = |id: &str| answers.iter().find(|a| a["span_id"] == id).unwrap().clone();
    assert!(
        by_span(&calls[0].span_id)["sentences_supported_by_document"]
            .as_u64()
            .unwrap()
            >= 1,
        "{p}"
    );
    assert_eq!(
        by_span(&calls[1].span_id)["trace_id"],
        calls[1].trace_id.as_str()
    );
    let p = get_json(&s, "/api/v1/quality/provenance?unsupported=true");
    let unsupported: Vec<&str> = p["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["span_id"].as_str().unwrap())
        .collect();
    assert_eq!(unsupported, [calls[1].span_id.as_str()], "{p}");
    assert!(
        get_json(&s, "/api/v1/quality/provenance?document=deleted-doc")["answers"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let d = get_json(&s, "/api/v1/quality/documents");
    let doc = |id: &str| {
        d["documents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["document_id"] == id)
            .unwrap_or_else(|| panic!("{id} not in {d}"))
            .clone()
    };
    assert_eq!(doc("eiffel")["answers"], 2, "{d}");
    // The contradicting answer's first sentence shares most of its words with eiffel (only
    // the number differs), so eiffel is its best passage too: 2 answers, 3 sentences.
    assert_eq!(doc("eiffel")["supporting_answers"], 2, "{d}");
    assert_eq!(doc("eiffel")["supported_sentences"], 3, "{d}");
    assert_eq!(doc("louvre")["answers"], 2, "{d}");
    assert_eq!(doc("louvre")["supporting_answers"], 0, "{d}");
    assert_eq!(d["retrieval"]["answers"], 2, "{d}");
    assert_eq!(d["retrieval"]["mean_documents"], 2.0, "{d}");
    assert_eq!(
        d["retrieval"]["answers_with_unsupported_sentences"], 1,
        "{d}"
    );
    // The same from the CLI.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sightline"))
        .args([
            "query",
            "provenance",
            "--document",
            "eiffel",
            "--unsupported",
            "--url",
        ])
        .arg(format!("http://{}", s.http))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains(&calls[1].span_id) && !table.contains(&calls[0].span_id),
        "{table}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sightline"))
        .args(["query", "documents", "--url"])
        .arg(format!("http://{}", s.http))
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("eiffel") && table.contains("2 answers"),
        "{table}"
    );
}

/// An OTLP/JSON export of one span of trace `trace` (hex) with `attrs` (JSON key-values).
pub(crate) fn one_span_json(
    trace: &str,
    span: &str,
    parent: Option<&str>,
    name: &str,
    start_ms_ago: u128,
    attrs: &str,
) -> Vec<u8> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let start = now - start_ms_ago * 1_000_000;
    let parent = parent.map_or(String::new(), |p| format!(r#""parentSpanId":"{p}","#));
    format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"rag"}}}}]}},"scopeSpans":[{{"spans":[{{"traceId":"{trace}","spanId":"{span}",{parent}"name":"{name}","kind":1,"startTimeUnixNano":"{start}","endTimeUnixNano":"{}","attributes":[{attrs}]}}]}}]}}]}}"#,
        start + 1_000_000
    )
    .into_bytes()
}

pub(crate) fn kv(k: &str, v: &str) -> String {
    format!(
        r#"{{"key":"{k}","value":{{"stringValue":{}}}}}"#,
        serde_json::to_string(v).unwrap()
    )
}

pub(crate) fn retriever_span(trace: &str) -> Vec<u8> {
    let attrs = [
        kv("openinference.span.kind", "RETRIEVER"),
        kv("retrieval.documents.0.document.id", "eiffel"),
        kv(
            "retrieval.documents.0.document.content",
            "The Eiffel Tower is 330 metres tall and stands in Paris.",
        ),
    ]
    .join(",");
    one_span_json(
        trace,
        "00000000000000a1",
        Some("00000000000000a0"),
        "retrieve",
        900,
        &attrs,
    )
}

pub(crate) fn chat_span(trace: &str) -> Vec<u8> {
    let attrs = [
        kv("openinference.span.kind", "LLM"),
        kv("llm.model_name", "gpt-4o-2024-08-06"),
        kv(
            "llm.output_messages.0.message.content",
            "The Eiffel Tower is 912 metres tall. Napoleon built it in Berlin.",
        ),
    ]
    .join(",");
    one_span_json(
        trace,
        "00000000000000a2",
        Some("00000000000000a0"),
        "chat",
        500,
        &attrs,
    )
}

/// `chat_span(trace)` as the protobuf request an OTLP/gRPC exporter sends.
fn chat_span_grpc(trace: &str) -> ExportTraceServiceRequest {
    let hex = |h: &str| -> Vec<u8> {
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
            .collect()
    };
    let kv = |k: &str, v: &str| KeyValue {
        key: k.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(v.to_owned())),
        }),
        ..Default::default()
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let start = now - 500 * 1_000_000;
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![kv("service.name", "rag")],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans: vec![Span {
                    trace_id: hex(trace),
                    span_id: hex("00000000000000a2"),
                    parent_span_id: hex("00000000000000a0"),
                    name: "chat".into(),
                    kind: 1,
                    start_time_unix_nano: start,
                    end_time_unix_nano: start + 1_000_000,
                    attributes: vec![
                        kv("openinference.span.kind", "LLM"),
                        kv("llm.model_name", "gpt-4o-2024-08-06"),
                        kv(
                            "llm.output_messages.0.message.content",
                            "The Eiffel Tower is 912 metres tall. Napoleon built it in Berlin.",
                        ),
                    ],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

#[test]
fn pieces_over_both_transports_are_assembled() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sightline.toml");
    std::fs::write(&config, "[limits]\nassembly_settle_secs = 1\n").unwrap();
    let s = ServerProcess::start(
        &dir.path().join("data"),
        &["--config", config.to_str().unwrap()],
        dir.path().join("server.log"),
    );
    // The chat span over OTLP/gRPC, then the retriever that ran before it over OTLP/HTTP.
    let t = "33333333333333333333333333333333";
    let rt = tokio::runtime::Runtime::new().unwrap();
    let resp = rt.block_on(async {
        let mut c = TraceServiceClient::connect(format!("http://{}", s.grpc))
            .await
            .unwrap();
        c.export(chat_span_grpc(t)).await
    });
    assert!(resp.unwrap().into_inner().partial_success.is_none());
    let r = http(
        s.http,
        "POST",
        "/v1/traces",
        &[("Content-Type", "application/json")],
        &retriever_span(t),
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let e = evaluation_of(&s, t, "00000000000000a2");
    assert!(
        e["quality"]["hallucination_index"].as_f64().unwrap() > 0.3,
        "{e}"
    );
    assert_eq!(
        ids(&e["attributes"]["sightline.evaluation.documents"]),
        ["eiffel"]
    );
}

#[test]
fn pieces_out_of_order_and_a_crash_while_assembling_are_still_evaluated() {
    const JSON: (&str, &str) = ("Content-Type", "application/json");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sightline.toml");
    std::fs::write(&config, "[limits]\nassembly_settle_secs = 1\n").unwrap();
    let cfg = ["--config", config.to_str().unwrap()];
    let s = ServerProcess::start(
        &dir.path().join("data"),
        &cfg,
        dir.path().join("server.log"),
    );
    // The chat span first, the retriever that ran before it in a later request.
    let t1 = "11111111111111111111111111111111";
    for body in [chat_span(t1), retriever_span(t1)] {
        let r = http(s.http, "POST", "/v1/traces", &[JSON], &body).unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let e = evaluation_of(&s, t1, "00000000000000a2");
    assert!(
        e["quality"]["hallucination_index"].as_f64().unwrap() > 0.3,
        "{e}"
    );
    assert_eq!(
        ids(&e["attributes"]["sightline.evaluation.documents"]),
        ["eiffel"]
    );
    // Both pieces stored, then SIGKILL before the settle time: the next start evaluates it.
    let t2 = "22222222222222222222222222222222";
    for body in [retriever_span(t2), chat_span(t2)] {
        let r = http(s.http, "POST", "/v1/traces", &[JSON], &body).unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
    }
    s.kill();
    let s = ServerProcess::start(
        &dir.path().join("data"),
        &cfg,
        dir.path().join("server2.log"),
    );
    let e2 = evaluation_of(&s, t2, "00000000000000a2");
    assert_eq!(
        e2["quality"]["hallucination_index"], e["quality"]["hallucination_index"],
        "the same pieces score the same"
    );
    let metrics = http(s.http, "GET", "/metrics", &[], b"").unwrap().text();
    assert!(
        metrics.contains("sightline_assembly_recovered_traces_total 1"),
        "{metrics}"
    );
    // Evaluated once: t1's evaluation is not written again by the recovery scan.
    let t = get_json(&s, &format!("/api/v1/traces/{t1}"));
    let n = t["data"]["spans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|sp| sp["name"] == "sightline.evaluation")
        .count();
    assert_eq!(n, 1, "{t}");
}

#[test]
fn long_prompts_and_answers_are_kept_or_truncated_never_rejected() {
    const JSON: (&str, &str) = ("Content-Type", "application/json");
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path());
    // A 3 MiB answer (over the 256 KiB per-value limit of other attributes) is kept whole; a
    // 5 MiB one is cut to the 4 MiB content budget and the span says so.
    for (trace, mib) in [
        ("33333333333333333333333333333333", 3),
        ("55555555555555555555555555555555", 5),
    ] {
        let answer = "The Eiffel Tower is 330 metres tall. ".repeat((mib << 20) / 37 + 1);
        let attrs = [
            kv("openinference.span.kind", "LLM"),
            kv("llm.output_messages.0.message.content", &answer),
        ]
        .join(",");
        let body = one_span_json(trace, "00000000000000b1", None, "chat", 10, &attrs);
        let r = http(s.http, "POST", "/v1/traces", &[JSON], &body).unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
        let resp: Value = serde_json::from_slice(&r.body).unwrap();
        let t = get_json(&s, &format!("/api/v1/traces/{trace}"));
        let span = &t["data"]["spans"][0];
        let stored = span["attributes"]["llm.output_messages.0.message.content"]
            .as_str()
            .unwrap();
        if mib == 3 {
            assert_eq!(stored.len(), answer.len());
            assert!(span["attributes"]["sightline.truncated_attributes"].is_null());
            assert!(resp.get("partialSuccess").is_none(), "{resp}");
        } else {
            assert_eq!(stored.len(), 4 << 20);
            assert!(answer.starts_with(stored));
            assert_eq!(
                span["attributes"]["sightline.truncated_attributes"],
                serde_json::json!(["llm.output_messages.0.message.content"])
            );
            let ps = &resp["partialSuccess"];
            assert!(
                ps["errorMessage"].as_str().unwrap().contains("truncated"),
                "{resp}"
            );
        }
    }
    let metrics = http(s.http, "GET", "/metrics", &[], b"").unwrap().text();
    assert!(
        metrics.contains("sightline_ingest_truncated_items_total{signal=\"traces\"} 1"),
        "{metrics}"
    );
}
