//! Real OpenTelemetry clients (the Python SDK's OTLP exporters) against the real `sightline`
//! binary, over OTLP/HTTP and OTLP/gRPC, two tenants with bearer tokens, and a restart in
//! between. Everything the script reports as sent and acknowledged must be in the data
//! directory, exactly, in the right tenant, and nothing else.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;

use crate::common::*;
use serde_json::Value;
use sightline_storage::{AttrValue, SeriesDef, SpanRecord, Store, TenantId};

fn attr_from_manifest(v: &Value) -> AttrValue {
    let (kind, val) = v.as_object().unwrap().iter().next().unwrap();
    match kind.as_str() {
        "str" => AttrValue::Str(val.as_str().unwrap().to_owned()),
        "int" => AttrValue::Int(val.as_i64().unwrap()),
        "double" => AttrValue::Double(val.as_f64().unwrap()),
        "bool" => AttrValue::Bool(val.as_bool().unwrap()),
        "array" => AttrValue::Array(
            val.as_array()
                .unwrap()
                .iter()
                .map(attr_from_manifest)
                .collect(),
        ),
        "kvlist" => AttrValue::KvList(
            val.as_array()
                .unwrap()
                .iter()
                .map(|kv| {
                    (
                        kv[0].as_str().unwrap().to_owned(),
                        attr_from_manifest(&kv[1]),
                    )
                })
                .collect(),
        ),
        "empty" => AttrValue::Empty,
        other => panic!("unknown kind {other}"),
    }
}

fn attrs_from_manifest(v: &Value) -> Vec<(String, AttrValue)> {
    let mut out: Vec<(String, AttrValue)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|kv| {
            (
                kv[0].as_str().unwrap().to_owned(),
                attr_from_manifest(&kv[1]),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn sorted(mut a: Vec<(String, AttrValue)>) -> Vec<(String, AttrValue)> {
    a.sort_by(|x, y| x.0.cmp(&y.0));
    a
}

/// Canonical GenAI keys removed from the attribute list when their type matches the column.
fn promoted_losslessly(key: &str, v: &AttrValue) -> bool {
    match key {
        "gen_ai.operation.name"
        | "gen_ai.provider.name"
        | "gen_ai.request.model"
        | "gen_ai.response.model"
        | "gen_ai.conversation.id" => matches!(v, AttrValue::Str(_)),
        "gen_ai.usage.input_tokens"
        | "gen_ai.usage.output_tokens"
        | "gen_ai.usage.total_tokens"
        | "gen_ai.usage.cache_read.input_tokens" => matches!(v, AttrValue::Int(_)),
        "gen_ai.usage.cost" | "gen_ai.request.temperature" => matches!(v, AttrValue::Double(_)),
        "gen_ai.response.finish_reasons" => matches!(v, AttrValue::Array(_)),
        _ => false,
    }
}

fn check_span(sent: &Value, got: &SpanRecord) {
    let name = sent["name"].as_str().unwrap();
    assert_eq!(got.name, name);
    assert_eq!(
        got.parent_span_id.map(|p| p.to_hex()),
        sent["parent_span_id"].as_str().map(str::to_owned),
        "{name}"
    );
    assert_eq!(got.kind as i64, sent["kind"].as_i64().unwrap(), "{name}");
    assert_eq!(got.start.0, sent["start"].as_i64().unwrap(), "{name}");
    assert_eq!(got.end.0, sent["end"].as_i64().unwrap(), "{name}");
    assert_eq!(
        got.status_code as i64,
        sent["status_code"].as_i64().unwrap(),
        "{name}"
    );
    assert_eq!(got.status_message, sent["status_message"].as_str().unwrap());
    assert_eq!(got.service_name, sent["service_name"].as_str().unwrap());
    assert_eq!(got.scope_name, sent["scope_name"].as_str().unwrap());
    assert_eq!(got.scope_version, sent["scope_version"].as_str().unwrap());
    assert_eq!(
        sorted(got.resource_attributes.clone()),
        attrs_from_manifest(&sent["resource_attributes"])
    );
    let sent_attrs = attrs_from_manifest(&sent["attributes"]);
    let expected: Vec<_> = sent_attrs
        .iter()
        .filter(|(k, v)| !promoted_losslessly(k, v))
        .cloned()
        .collect();
    // What was sent comes back as sent; a span scored at ingest (its own documents and
    // answer) also holds its evidence, the `sightline.evaluation.*` attributes.
    let (evidence, stored): (Vec<_>, Vec<_>) = got
        .attributes
        .iter()
        .cloned()
        .partition(|(k, _)| k.starts_with("sightline.evaluation."));
    assert_eq!(sorted(stored), expected, "attributes of {name}");
    if got.quality.hallucination_index.is_some() {
        let at = |key: &str| evidence.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        assert_eq!(
            at("sightline.evaluation.target_span_id"),
            Some(&AttrValue::Str(got.span_id.to_hex())),
            "evidence of {name}: {evidence:?}"
        );
        assert!(
            at("sightline.evaluation.evidence").is_some(),
            "{name}: {evidence:?}"
        );
    } else {
        assert!(evidence.is_empty(), "{name} was not scored: {evidence:?}");
    }
    // Every canonical attribute that left the list is in its column.
    let g = &got.gen_ai;
    for (k, v) in &sent_attrs {
        let col: Option<AttrValue> = match k.as_str() {
            "gen_ai.operation.name" => g.operation_name.clone().map(AttrValue::Str),
            "gen_ai.provider.name" => g.provider_name.clone().map(AttrValue::Str),
            "gen_ai.request.model" => g.request_model.clone().map(AttrValue::Str),
            "gen_ai.response.model" => g.response_model.clone().map(AttrValue::Str),
            "gen_ai.conversation.id" => g.conversation_id.clone().map(AttrValue::Str),
            "gen_ai.usage.input_tokens" => g.input_tokens.map(AttrValue::Int),
            "gen_ai.usage.output_tokens" => g.output_tokens.map(AttrValue::Int),
            "gen_ai.usage.cost" => g.cost.map(AttrValue::Double),
            "gen_ai.request.temperature" => g.temperature.map(AttrValue::Double),
            "gen_ai.response.finish_reasons" => Some(AttrValue::Array(
                g.finish_reasons
                    .iter()
                    .cloned()
                    .map(AttrValue::Str)
                    .collect(),
            )),
            _ => continue,
        };
        assert_eq!(col.as_ref(), Some(v), "column of {k} on {name}");
    }
    let events = sent["events"].as_array().unwrap();
    assert_eq!(got.events.len(), events.len(), "{name}");
    for (e, s) in got.events.iter().zip(events) {
        assert_eq!(e.name, s["name"].as_str().unwrap());
        assert_eq!(e.time.0, s["time"].as_i64().unwrap());
        assert_eq!(
            sorted(e.attributes.clone()),
            attrs_from_manifest(&s["attributes"])
        );
    }
    let links = sent["links"].as_array().unwrap();
    assert_eq!(got.links.len(), links.len());
    for (l, s) in got.links.iter().zip(links) {
        assert_eq!(l.trace_id.to_hex(), s["trace_id"].as_str().unwrap());
        assert_eq!(l.span_id.to_hex(), s["span_id"].as_str().unwrap());
        assert_eq!(
            sorted(l.attributes.clone()),
            attrs_from_manifest(&s["attributes"])
        );
    }
}

fn expected_uncertainty(sent: &Value) -> (f64, f64, i64) {
    // The logprobs the script attached, scored by sightline_detect directly.
    let attrs = attrs_from_manifest(&sent["attributes"]);
    let text = attrs
        .iter()
        .find(|(k, _)| k == "gen_ai.response.logprobs")
        .map(|(_, v)| v.render())
        .unwrap();
    let lp = sightline_detect::logprobs::parse_logprobs(&text).unwrap();
    let u = sightline_detect::entropy::response_uncertainty(&lp, &Default::default()).unwrap();
    (
        u.entropy_mean.unwrap(),
        u.entropy_max.unwrap(),
        u.low_confidence.tokens_below as i64,
    )
}

fn verify_spans(store: &Store, t: &TenantId, manifest: &Value) {
    let sent = manifest["spans"].as_array().unwrap();
    assert_eq!(sent.len(), 5);
    let stored = all_spans(store, t);
    assert_eq!(stored.len(), sent.len(), "span count in tenant {t}");
    let by_id: HashMap<(String, String), &SpanRecord> = stored
        .iter()
        .map(|s| ((s.trace_id.to_hex(), s.span_id.to_hex()), s))
        .collect();
    for s in sent {
        let key = (
            s["trace_id"].as_str().unwrap().to_owned(),
            s["span_id"].as_str().unwrap().to_owned(),
        );
        let got = by_id
            .get(&key)
            .unwrap_or_else(|| panic!("span {key:?} missing"));
        check_span(s, got);
        // Lookup by trace id returns it too.
        let trace = store.trace(t, got.trace_id).unwrap();
        assert!(trace.iter().any(|x| x.span_id == got.span_id));
    }
    let find = |n: &str| stored.iter().find(|s| s.name == n).unwrap();
    let chat = find("chat gpt-4o");
    let chat_sent = sent.iter().find(|s| s["name"] == "chat gpt-4o").unwrap();
    let (mean, max, low) = expected_uncertainty(chat_sent);
    assert_eq!(chat.quality.entropy_mean, Some(mean));
    assert_eq!(chat.quality.entropy_max, Some(max));
    assert_eq!(chat.quality.low_confidence_tokens, Some(low));
    let h = chat.quality.hallucination_index.unwrap();
    assert!((0.0..=1.0).contains(&h));
    assert_eq!(
        chat.gen_ai.total_tokens,
        Some(821),
        "llm.token_count.total alias"
    );
    let legacy = find("legacy completion");
    assert_eq!(legacy.gen_ai.provider_name.as_deref(), Some("anthropic"));
    assert_eq!(legacy.gen_ai.input_tokens, Some(100));
    assert_eq!(legacy.gen_ai.output_tokens, Some(20));
    assert_eq!(
        legacy.gen_ai.request_model.as_deref(),
        Some("claude-3-5-sonnet")
    );
    assert_eq!(
        legacy.gen_ai.response_model.as_deref(),
        Some("claude-3-5-sonnet-20241022"),
        "OpenInference's llm.model_name is the response model"
    );
    assert_eq!(
        legacy.quality.entropy_mean,
        Some(mean),
        "logprobs from the gen_ai.choice event"
    );
    assert_eq!(legacy.quality.hallucination_index, None);
    let retrieve = find("retrieve");
    assert_eq!(retrieve.quality, Default::default());
    let root = find("rag-pipeline");
    assert_eq!(root.parent_span_id, None);
    for s in &stored {
        assert_eq!(s.trace_id, root.trace_id, "one trace");
    }
}

fn verify_logs(store: &Store, t: &TenantId, manifest: &Value) {
    let sent = manifest["logs"].as_array().unwrap();
    assert_eq!(sent.len(), 4);
    let stored = all_logs(store, t);
    assert_eq!(stored.len(), sent.len(), "log count in tenant {t}");
    for s in sent {
        let body = attr_from_manifest(&s["body"]);
        let time = s["time"].as_i64();
        let observed = s["observed_time"].as_i64().unwrap();
        let got = stored
            .iter()
            .find(|l| l.observed_time.0 == observed && l.body.to_json() == body.to_json())
            .unwrap_or_else(|| panic!("log {s} missing from {stored:?}"));
        assert_eq!(
            got.time.0,
            time.unwrap_or(observed),
            "zero time falls back to observed"
        );
        assert_eq!(
            got.severity_number as i64,
            s["severity_number"].as_i64().unwrap()
        );
        assert_eq!(got.severity_text, s["severity_text"].as_str().unwrap());
        assert_eq!(
            got.trace_id.map(|x| x.to_hex()),
            s["trace_id"].as_str().map(str::to_owned)
        );
        assert_eq!(
            got.span_id.map(|x| x.to_hex()),
            s["span_id"].as_str().map(str::to_owned)
        );
        assert_eq!(
            sorted(got.attributes.clone()),
            attrs_from_manifest(&s["attributes"])
        );
        assert_eq!(got.service_name, s["service_name"].as_str().unwrap());
        assert_eq!(got.scope_name, s["scope_name"].as_str().unwrap());
        assert_eq!(got.event_name, s["event_name"].as_str().unwrap());
    }
    let correlated = stored.iter().filter(|l| l.trace_id.is_some()).count();
    assert_eq!(correlated, 3);
    // Correlated logs point at spans of the same tenant.
    let spans = all_spans(store, t);
    for l in stored.iter().filter(|l| l.span_id.is_some()) {
        assert!(
            spans
                .iter()
                .any(|s| Some(s.span_id) == l.span_id && Some(s.trace_id) == l.trace_id)
        );
    }
}

fn verify_metrics(store: &Store, t: &TenantId, manifest: &Value) {
    let run = manifest["run"].as_str().unwrap();
    let mut expected: BTreeMap<u64, (String, Vec<(i64, f64)>)> = BTreeMap::new();
    let mut add = |name: String, labels: Vec<(String, String)>, ts: i64, v: f64| {
        let def = SeriesDef::new(name.clone(), Default::default(), labels);
        expected
            .entry(def.id.0)
            .or_insert_with(|| (name, Vec::new()))
            .1
            .push((ts, v));
    };
    let metrics = manifest["metrics"].as_array().unwrap();
    assert!(metrics.len() >= 5, "{metrics:?}");
    for m in metrics {
        let mname = m["name"].as_str().unwrap();
        let base = match mname {
            "llm.requests" => "llm_requests_total",
            "queue.depth" => "queue_depth",
            "gen_ai.client.token.usage" => "gen_ai_client_token_usage",
            "llm.latency" => "llm_latency_seconds",
            "gpu.utilization" => "gpu_utilization_ratio",
            other => panic!("unexpected metric {other}"),
        };
        for p in m["points"].as_array().unwrap() {
            let mut labels: Vec<(String, String)> = attrs_from_manifest(&p["attributes"])
                .into_iter()
                .map(|(k, v)| (k.replace('.', "_"), v.render()))
                .collect();
            labels.push(("job".into(), format!("llm-app-{run}")));
            labels.push(("instance".into(), "instance-1".into()));
            labels.push((
                "otel_scope_name".into(),
                m["scope_name"].as_str().unwrap().into(),
            ));
            labels.push((
                "otel_scope_version".into(),
                m["scope_version"].as_str().unwrap().into(),
            ));
            let ts = p["time"].as_i64().unwrap() / 1_000_000;
            if m["type"] == "histogram" {
                let bounds = p["bounds"].as_array().unwrap();
                let counts = p["bucket_counts"].as_array().unwrap();
                let mut cum = 0u64;
                for (b, c) in bounds.iter().zip(counts) {
                    cum += c.as_u64().unwrap();
                    let mut l = labels.clone();
                    l.push(("le".into(), format!("{}", b.as_f64().unwrap())));
                    add(format!("{base}_bucket"), l, ts, cum as f64);
                }
                let count = p["count"].as_u64().unwrap() as f64;
                let mut l = labels.clone();
                l.push(("le".into(), "+Inf".into()));
                add(format!("{base}_bucket"), l, ts, count);
                add(
                    format!("{base}_sum"),
                    labels.clone(),
                    ts,
                    p["sum"].as_f64().unwrap(),
                );
                add(format!("{base}_count"), labels.clone(), ts, count);
            } else {
                add(base.to_owned(), labels, ts, p["value"].as_f64().unwrap());
            }
        }
    }
    let mut stored: BTreeMap<u64, Vec<(i64, f64)>> = BTreeMap::new();
    for (id, ts, v) in all_samples(store, t) {
        stored.entry(id).or_default().push((ts, v));
    }
    // target_info: one series with the non-identifying resource attributes.
    let ti = store.series(
        t,
        &[sightline_storage::Matcher::eq("__name__", "target_info")],
    );
    assert_eq!(ti.len(), 1, "{ti:?}");
    assert_eq!(ti[0].label("deployment_environment_name"), "test");
    assert_eq!(ti[0].label("job"), format!("llm-app-{run}"));
    assert_eq!(ti[0].label("telemetry_sdk_language"), "python");
    stored.remove(&ti[0].id.0);
    for (id, (name, points)) in &expected {
        let got = stored.get(id).unwrap_or_else(|| {
            let known: Vec<String> = store
                .series(t, &[])
                .iter()
                .map(|d| format!("{} {:?}", d.metric_name, d.labels))
                .collect();
            panic!("series {name} ({id:#x}) missing; stored series: {known:#?}")
        });
        let mut got = got.clone();
        got.sort_by_key(|a| a.0);
        let mut want = points.clone();
        want.sort_by_key(|a| a.0);
        assert_eq!(got, want, "samples of {name}");
    }
    assert_eq!(
        stored.len(),
        expected.len(),
        "no other series in tenant {t}"
    );
    let counter = store.series(
        t,
        &[sightline_storage::Matcher::eq(
            "__name__",
            "llm_requests_total",
        )],
    );
    assert!(
        counter
            .iter()
            .all(|d| d.kind == sightline_storage::MetricKind::Counter && d.unit == "{request}")
    );
}

fn run_client(
    py: &Path,
    transport: &str,
    endpoint: &str,
    run: &str,
    token: &str,
    dir: &Path,
) -> Value {
    let manifest = dir.join(format!("manifest-{run}.json"));
    let out = Command::new(py)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/otlp_client.py"))
        .args([
            "--transport",
            transport,
            "--endpoint",
            endpoint,
            "--run",
            run,
            "--token",
            token,
        ])
        .arg("--manifest")
        .arg(&manifest)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "client failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap()
}

#[test]
fn python_sdk_http_and_grpc_two_tenants_with_restart() {
    let Some(py) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let tokens = tmp.path().join("tokens");
    std::fs::write(&tokens, "# e2e tokens\ntok-a tenant-a\ntok-b tenant-b\n").unwrap();
    let tokens_arg = tokens.to_str().unwrap().to_owned();
    let args = ["--auth-tokens-file", tokens_arg.as_str()];

    // Phase 1: OTLP/HTTP as tenant-a.
    let server = ServerProcess::start(&data, &args, tmp.path().join("server1.log"));
    let m_http = run_client(
        &py,
        "http",
        &server.http.to_string(),
        "http1",
        "tok-a",
        tmp.path(),
    );
    // A wrong token is refused and writes nothing.
    let r = http(
        server.http,
        "POST",
        "/v1/traces",
        &[
            ("content-type", "application/json"),
            ("authorization", "Bearer nope"),
        ],
        b"{}",
    )
    .unwrap();
    assert_eq!(r.status, 401);
    server.stop();

    // Phase 2: restart, OTLP/gRPC as tenant-b.
    let server = ServerProcess::start(&data, &args, tmp.path().join("server2.log"));
    let m_grpc = run_client(
        &py,
        "grpc",
        &server.grpc.to_string(),
        "grpc1",
        "tok-b",
        tmp.path(),
    );
    server.stop();

    let store = open_store(&data);
    let mut tenants: Vec<String> = store.tenants().iter().map(|t| t.to_string()).collect();
    tenants.sort();
    assert_eq!(tenants, vec!["tenant-a", "tenant-b"]);
    for (t, m) in [("tenant-a", &m_http), ("tenant-b", &m_grpc)] {
        let t = tenant(t);
        verify_spans(&store, &t, m);
        verify_logs(&store, &t, m);
        verify_metrics(&store, &t, m);
    }
}
