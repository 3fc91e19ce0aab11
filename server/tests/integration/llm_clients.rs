//! LLM analytics from real instrumentation: the `openai` Python SDK instrumented by
//! `openinference-instrumentation-openai` and by `opentelemetry-instrumentation-openai-v2`,
//! unmodified, exporting OTLP/HTTP to the real binary, against a deterministic fake
//! OpenAI-compatible server on loopback (`server/tests/python/fake_openai.py`).
//!
//! Per library: the LLM spans are found by model with provider and operation set; where the
//! library records logprobs (OpenInference, inside `output.value`) the entropy columns equal
//! the values computed here from the logprobs the SDK received (1e-9) and the tokens view
//! returns every token; where it records none (openai-v2), the quality API says so and points
//! at the docs.

use std::process::Command;

use serde_json::Value;

use crate::common::{ServerProcess, http, python};

/// One call as the client script reports it.
struct Call {
    trace_id: String,
    span_id: String,
    answer: String,
    /// Per token: (token, sampled logprob, alternatives' logprobs).
    tokens: Vec<(String, f64, Vec<f64>)>,
}

fn run_client(py: &std::path::Path, library: &str, s: &ServerProcess) -> Vec<Call> {
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

fn get_json(s: &ServerProcess, path: &str) -> Value {
    let r = http(s.http, "GET", path, &[], b"").unwrap();
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    serde_json::from_slice(&r.body).unwrap()
}

/// The stored span `call` names, from the trace view.
fn span_of(s: &ServerProcess, call: &Call) -> Value {
    let t = get_json(s, &format!("/api/v1/traces/{}", call.trace_id));
    t["data"]["spans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|sp| sp["span_id"] == call.span_id.as_str())
        .unwrap_or_else(|| panic!("span {} not in {t}", call.span_id))
        .clone()
}

fn server(dir: &std::path::Path) -> ServerProcess {
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
        let g = &span["gen_ai"];
        assert_eq!(g["request_model"], "gpt-4o", "{span}");
        assert_eq!(g["response_model"], "gpt-4o-2024-08-06", "{span}");
        assert_eq!(g["provider_name"], "openai", "{span}");
        assert_eq!(g["operation_name"], "chat", "{span}");
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
            &s,
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
    // Found by the request model the application asked for, grouped by model.
    let series = get_json(
        &s,
        "/api/v1/quality?metric=token_entropy_mean&by=model&model=gpt-4o&step=1h",
    );
    let groups = series["series"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{series}");
    assert_eq!(groups[0]["group"], "gpt-4o", "{series}");
}

#[test]
fn openai_v2_spans_are_found_and_empty_quality_says_why() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path());
    let calls = run_client(&py, "openai-v2", &s);
    assert_eq!(calls.len(), 2);
    for call in &calls {
        let span = span_of(&s, call);
        let g = &span["gen_ai"];
        assert_eq!(g["request_model"], "gpt-4o", "{span}");
        assert_eq!(g["response_model"], "gpt-4o-2024-08-06", "{span}");
        assert_eq!(g["provider_name"], "openai", "{span}");
        assert_eq!(g["operation_name"], "chat", "{span}");
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
