//! What an answer is grounded on, from real instrumentation: answers whose content arrives
//! only as log records correlated to the chat span (openai-v2 with `EVENT_ONLY`), tool results
//! in the conversation as context (openai-v2, OpenLLMetry), RAG provenance per route and prompt template
//! (OpenInference's `using_prompt_template`), and, from hand-built spans, retriever scores and
//! tool spans.

use serde_json::Value;

use crate::common::{ServerProcess, http, python};
use crate::llm_clients::{
    evaluation_of, get_json, ids, kv, one_span_json, retriever_span, run_client, server,
};

fn attr<'a>(e: &'a Value, key: &str) -> &'a Value {
    &e["attributes"][key]
}

fn evidence(e: &Value) -> Value {
    serde_json::from_str(attr(e, "sightline.evaluation.evidence").as_str().unwrap()).unwrap()
}

fn index(e: &Value) -> f64 {
    e["quality"]["hallucination_index"].as_f64().expect("index")
}

#[test]
fn answers_sent_only_as_log_records_are_assembled_with_the_retriever() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path());
    let calls = run_client(&py, "openai-v2-events-rag", &s);
    assert_eq!(calls.len(), 2);
    let evals: Vec<Value> = calls
        .iter()
        .map(|c| evaluation_of(&s, &c.trace_id, &c.span_id))
        .collect();
    // The chat span itself carries no content: it came in the log record.
    let t = get_json(&s, &format!("/api/v1/traces/{}", calls[0].trace_id));
    let chat = t["data"]["spans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|sp| sp["span_id"] == calls[0].span_id.as_str())
        .unwrap()
        .clone();
    assert!(
        chat["attributes"].get("gen_ai.output.messages").is_none(),
        "{chat}"
    );
    for e in &evals {
        assert_eq!(
            ids(attr(e, "sightline.evaluation.documents")),
            ["eiffel", "louvre"]
        );
        // The system message (from the log record's input messages) is context too.
        assert!(
            ids(attr(e, "sightline.evaluation.context")).contains(&"system_instructions".into()),
            "{e}"
        );
        assert_eq!(e["gen_ai"]["request_model"], "gpt-4o", "{e}");
        assert_eq!(attr(e, "sightline.evaluation.route"), "/ask", "{e}");
    }
    let (grounded, contradicting) = (&evals[0], &evals[1]);
    assert!(
        index(grounded) < index(contradicting),
        "{grounded} vs {contradicting}"
    );
    assert_eq!(
        ids(attr(grounded, "sightline.evaluation.supporting_documents")),
        ["eiffel"]
    );
    assert_eq!(
        attr(grounded, "sightline.evaluation.unsupported_sentences"),
        0
    );
    assert!(
        attr(contradicting, "sightline.evaluation.unsupported_sentences")
            .as_i64()
            .unwrap()
            > 0
    );
    let ev = evidence(grounded);
    assert_eq!(ev[0]["best"]["document_id"], "eiffel", "{ev}");
    assert_eq!(ev[0]["best"]["kind"], "document", "{ev}");
}

#[test]
fn tool_results_in_the_conversation_are_the_answers_context() {
    let Some(py) = python() else { return };
    assert_tool_results_are_context(&py, "openai-v2-tools");
}

#[test]
fn openllmetry_tool_results_are_the_answers_context() {
    let Some(py) = python() else { return };
    assert_tool_results_are_context(&py, "openllmetry-tools");
}

/// A conversation holding a tool call and its result, no retriever: the tool's result (named
/// by its call id) and the system instructions are the context.
fn assert_tool_results_are_context(py: &std::path::Path, library: &str) {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path());
    let calls = run_client(py, library, &s);
    assert_eq!(calls.len(), 2);
    let evals: Vec<Value> = calls
        .iter()
        .map(|c| evaluation_of(&s, &c.trace_id, &c.span_id))
        .collect();
    for e in &evals {
        assert_eq!(
            ids(attr(e, "sightline.evaluation.context")),
            ["system_instructions", "tool:call_1"],
            "{e}"
        );
        assert!(
            ids(attr(e, "sightline.evaluation.documents")).is_empty(),
            "{e}"
        );
    }
    let (grounded, contradicting) = (&evals[0], &evals[1]);
    assert!(
        index(grounded) < index(contradicting),
        "{grounded} vs {contradicting}"
    );
    let ev = evidence(grounded);
    assert_eq!(ev[0]["supported"], true, "{ev}");
    assert_eq!(ev[0]["best"]["document_id"], "tool:call_1", "{ev}");
    assert_eq!(ev[0]["best"]["kind"], "tool_result", "{ev}");
    assert_eq!(
        ids(attr(grounded, "sightline.evaluation.supporting_context")),
        ["tool:call_1"]
    );
    assert!(
        attr(contradicting, "sightline.evaluation.unsupported_sentences")
            .as_i64()
            .unwrap()
            > 0
    );
}

#[test]
fn provenance_per_route_and_prompt_template_with_sentences() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path());
    let calls = run_client(&py, "openinference-rag", &s);
    for c in &calls {
        evaluation_of(&s, &c.trace_id, &c.span_id);
    }
    let template = "Answer from the retrieved context. {context}@v1";
    for by in ["prompt_template", "route", "model"] {
        let g = get_json(&s, &format!("/api/v1/quality/provenance/groups?by={by}"));
        let groups = g["groups"].as_array().unwrap();
        assert_eq!(groups.len(), 1, "{g}");
        let want = match by {
            "prompt_template" => template,
            "route" => "/ask",
            _ => "gpt-4o",
        };
        assert_eq!(groups[0]["group"], want, "{g}");
        assert_eq!(groups[0]["answers"], 2, "{g}");
        assert_eq!(groups[0]["answers_with_unsupported_sentences"], 1, "{g}");
        assert_eq!(groups[0]["unsupported_share"], 0.5, "{g}");
    }
    // Filtered by template and route: the contradicting answer, with its sentences.
    let q = format!(
        "/api/v1/quality/provenance?unsupported=true&route=/ask&prompt_template={}",
        template
            .replace(' ', "%20")
            .replace('{', "%7B")
            .replace('}', "%7D")
    );
    let p = get_json(&s, &q);
    let answers = p["answers"].as_array().unwrap();
    assert_eq!(answers.len(), 1, "{p}");
    let a = &answers[0];
    assert_eq!(a["span_id"], calls[1].span_id.as_str(), "{p}");
    assert_eq!(a["route"], "/ask");
    assert_eq!(a["prompt_template"], template);
    let sentences = a["sentences"].as_array().unwrap();
    assert_eq!(sentences.len(), 2, "{p}");
    // "Napoleon built it in Berlin." is supported by nothing.
    let last = &sentences[1];
    assert_eq!(last["supported"], false, "{p}");
    let answer = &calls[1].answer;
    let chars: Vec<char> = answer.chars().collect();
    let text: String = chars[last["start_char"].as_u64().unwrap() as usize
        ..last["end_char"].as_u64().unwrap() as usize]
        .iter()
        .collect();
    assert!(text.starts_with("Napoleon"), "{text:?} of {answer:?}");
    assert!(
        get_json(&s, "/api/v1/quality/provenance?route=/other")["answers"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // The CLI counts the same per template.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sightline"))
        .args(["query", "provenance", "--by", "prompt_template", "--url"])
        .arg(format!("http://{}", s.http))
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        table.contains(template) && table.contains("0.500"),
        "{table}"
    );
}

fn num_kv(k: &str, v: f64) -> String {
    format!(r#"{{"key":"{k}","value":{{"doubleValue":{v}}}}}"#)
}

fn post(s: &ServerProcess, body: &[u8]) {
    let r = http(
        s.http,
        "POST",
        "/v1/traces",
        &[("Content-Type", "application/json")],
        body,
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn retriever_scores_and_tool_spans_reach_provenance() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sightline.toml");
    std::fs::write(&config, "[limits]\nassembly_settle_secs = 1\n").unwrap();
    let s = ServerProcess::start(
        &dir.path().join("data"),
        &["--config", config.to_str().unwrap()],
        dir.path().join("server.log"),
    );
    // Trace 1: a request span on /chat, a retriever with three scored chunks, a chat span
    // whose answer comes from the best-scored one.
    let t = "44444444444444444444444444444444";
    post(
        &s,
        &one_span_json(
            t,
            "00000000000000b0",
            None,
            "POST /chat",
            1000,
            &kv("http.route", "/chat"),
        ),
    );
    let docs = [
        (
            "eiffel",
            "The Eiffel Tower is 330 metres tall and stands in Paris.",
            0.9,
        ),
        (
            "louvre",
            "The Louvre is the most visited museum in the world.",
            0.5,
        ),
        (
            "seine",
            "The Seine flows through Paris to the English Channel.",
            0.2,
        ),
    ];
    let mut attrs = vec![kv("openinference.span.kind", "RETRIEVER")];
    for (i, (id, text, score)) in docs.iter().enumerate() {
        attrs.push(kv(&format!("retrieval.documents.{i}.document.id"), id));
        attrs.push(kv(
            &format!("retrieval.documents.{i}.document.content"),
            text,
        ));
        attrs.push(num_kv(
            &format!("retrieval.documents.{i}.document.score"),
            *score,
        ));
    }
    post(
        &s,
        &one_span_json(
            t,
            "00000000000000b1",
            Some("00000000000000b0"),
            "retrieve",
            900,
            &attrs.join(","),
        ),
    );
    let chat = [
        kv("gen_ai.operation.name", "chat"),
        kv("gen_ai.request.model", "gpt-4o"),
        kv(
            "gen_ai.output.messages",
            r#"[{"role":"assistant","parts":[{"type":"text","content":"The Eiffel Tower is 330 metres tall."}]}]"#,
        ),
    ]
    .join(",");
    post(
        &s,
        &one_span_json(
            t,
            "00000000000000b2",
            Some("00000000000000b0"),
            "chat gpt-4o",
            500,
            &chat,
        ),
    );
    // Trace 2: an agent's tool span (semconv execute_tool) before its chat span.
    let t2 = "55555555555555555555555555555555";
    let tool = [
        kv("gen_ai.operation.name", "execute_tool"),
        kv("gen_ai.tool.name", "weather"),
        kv(
            "gen_ai.tool.call.result",
            "It is sunny and 21 degrees in Lyon.",
        ),
    ]
    .join(",");
    post(
        &s,
        &one_span_json(
            t2,
            "00000000000000c1",
            None,
            "execute_tool weather",
            900,
            &tool,
        ),
    );
    let chat2 = [
        kv("gen_ai.operation.name", "chat"),
        kv("gen_ai.request.model", "gpt-4o-mini"),
        kv(
            "gen_ai.output.messages",
            r#"[{"role":"assistant","parts":[{"type":"text","content":"It is snowing in Oslo."}]}]"#,
        ),
    ]
    .join(",");
    post(
        &s,
        &one_span_json(
            t2,
            "00000000000000c2",
            None,
            "chat gpt-4o-mini",
            500,
            &chat2,
        ),
    );

    let e = evaluation_of(&s, t, "00000000000000b2");
    let ev = evidence(&e);
    assert_eq!(ev[0]["best"]["document_id"], "eiffel", "{ev}");
    assert_eq!(ev[0]["best"]["score"], 0.9, "{ev}");
    assert_eq!(attr(&e, "sightline.evaluation.route"), "/chat");
    let e2 = evaluation_of(&s, t2, "00000000000000c2");
    assert_eq!(
        ids(attr(&e2, "sightline.evaluation.context")),
        ["tool:weather"]
    );
    assert!(index(&e2) > index(&e), "{e2} vs {e}");
    assert!(
        attr(&e2, "sightline.evaluation.unsupported_sentences")
            .as_i64()
            .unwrap()
            > 0
    );

    // Per retrieval: 3 chunks, 1 used; scores [0.2, 0.5, 0.9]: median 0.5; used 0.9; unused
    // [0.2, 0.5]: median 0.35.
    let d = get_json(&s, "/api/v1/quality/documents?route=/chat");
    let r = &d["retrieval"];
    assert_eq!(r["answers"], 1, "{d}");
    assert_eq!(r["retrievals"], 1, "{d}");
    assert_eq!(r["mean_chunks_per_retrieval"], 3.0, "{d}");
    assert_eq!(r["mean_chunks_used_per_retrieval"], 1.0, "{d}");
    assert_eq!(r["scores"]["count"], 3, "{d}");
    assert_eq!(r["scores"]["median"], 0.5, "{d}");
    assert_eq!(r["scores"]["max"], 0.9, "{d}");
    assert_eq!(r["used_scores"]["median"], 0.9, "{d}");
    let unused = r["unused_scores"]["median"].as_f64().unwrap();
    assert!((unused - 0.35).abs() < 1e-12, "{d}");
    let p = get_json(&s, "/api/v1/quality/provenance?document=eiffel");
    let sentence = &p["answers"][0]["sentences"][0];
    assert_eq!(sentence["supported"], true, "{p}");
    assert_eq!(sentence["best"]["score"], 0.9, "{p}");
    // Groups per model: the tool-grounded answer is the unsupported one.
    let g = get_json(&s, "/api/v1/quality/provenance/groups?by=model");
    let groups = g["groups"].as_array().unwrap();
    let of = |m: &str| groups.iter().find(|x| x["group"] == m).unwrap().clone();
    assert_eq!(of("gpt-4o")["answers_with_unsupported_sentences"], 0, "{g}");
    assert_eq!(
        of("gpt-4o-mini")["answers_with_unsupported_sentences"],
        1,
        "{g}"
    );
}

/// A semconv 1.28-1.36 `gen_ai.choice` event as an OTLP/JSON log record of `span` in `trace`,
/// named by the older `event.name` attribute, the answer in its body.
fn choice_log(trace: &str, span: &str, answer: &str) -> Vec<u8> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let answer = serde_json::to_string(answer).unwrap();
    format!(
        r#"{{"resourceLogs":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"rag"}}}}]}},"scopeLogs":[{{"logRecords":[{{"timeUnixNano":"{now}","traceId":"{trace}","spanId":"{span}","attributes":[{{"key":"event.name","value":{{"stringValue":"gen_ai.choice"}}}}],"body":{{"kvlistValue":{{"values":[{{"key":"index","value":{{"intValue":"0"}}}},{{"key":"message","value":{{"kvlistValue":{{"values":[{{"key":"role","value":{{"stringValue":"assistant"}}}},{{"key":"content","value":{{"stringValue":{answer}}}}}]}}}}}}]}}}}}}]}}]}}]}}"#
    )
    .into_bytes()
}

#[test]
fn an_answer_only_in_a_log_record_is_evaluated_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sightline.toml");
    std::fs::write(&config, "[limits]\nassembly_settle_secs = 1\n").unwrap();
    let cfg = ["--config", config.to_str().unwrap()];
    let s = ServerProcess::start(
        &dir.path().join("data"),
        &cfg,
        dir.path().join("server.log"),
    );
    // The retriever, a chat span without content, and its answer as a log record; then
    // SIGKILL before the settle time.
    let t = "66666666666666666666666666666666";
    post(&s, &retriever_span(t));
    let chat = [
        kv("gen_ai.operation.name", "chat"),
        kv("gen_ai.request.model", "gpt-4o"),
    ]
    .join(",");
    post(
        &s,
        &one_span_json(
            t,
            "00000000000000a2",
            Some("00000000000000a0"),
            "chat gpt-4o",
            500,
            &chat,
        ),
    );
    let r = http(
        s.http,
        "POST",
        "/v1/logs",
        &[("Content-Type", "application/json")],
        &choice_log(
            t,
            "00000000000000a2",
            "The Eiffel Tower is 912 metres tall. Napoleon built it in Berlin.",
        ),
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    s.kill();
    let s = ServerProcess::start(
        &dir.path().join("data"),
        &cfg,
        dir.path().join("server2.log"),
    );
    let e = evaluation_of(&s, t, "00000000000000a2");
    assert!(index(&e) > 0.3, "{e}");
    assert_eq!(ids(attr(&e, "sightline.evaluation.documents")), ["eiffel"]);
    assert!(
        attr(&e, "sightline.evaluation.unsupported_sentences")
            .as_i64()
            .unwrap()
            > 0,
        "{e}"
    );
    let metrics = http(s.http, "GET", "/metrics", &[], b"").unwrap().text();
    assert!(
        metrics.contains("sightline_assembly_recovered_traces_total 1"),
        "{metrics}"
    );
}
