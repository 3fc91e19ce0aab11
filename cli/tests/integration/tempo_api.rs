//! The Tempo API subset and the native trace API against the real `sightline serve`, with data
//! ingested over OTLP/HTTP, replaying the requests Grafana's Tempo datasource sends: the echo
//! health check, trace by id with `Accept: application/protobuf` (v1 and v2), search with
//! `q`/`limit`/`spss`/`start`/`end`, tags and tag values (v1 and v2). Asserts the shapes and
//! values Grafana reads, that OTLP in -> store -> Tempo protobuf out round-trips ids, parents,
//! attributes and events exactly, tenant isolation, 400 on bad TraceQL, 404 on unknown traces.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::common::*;
use base64::Engine as _;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue, any_value::Value,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::{Event, Link};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use prost::Message as _;
use serde_json::Value as Json;
use sightline_server::http::tempo::{Trace, TraceByIdResponse};

fn kv(k: &str, v: Value) -> KeyValue {
    KeyValue {
        key: k.into(),
        value: Some(AnyValue { value: Some(v) }),
        ..Default::default()
    }
}

fn s(v: &str) -> Value {
    Value::StringValue(v.into())
}

const T1: [u8; 16] = [0x0a, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
const T2: [u8; 16] = [0x0b; 16];
const T3: [u8; 16] = [0x0c; 16];

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn span(trace: [u8; 16], id: u8, parent: Option<u8>, name: &str, start: u64, dur_ms: u64) -> Span {
    Span {
        trace_id: trace.to_vec(),
        span_id: vec![0x5a, 0, 0, 0, 0, 0, 0, id],
        parent_span_id: parent
            .map(|p| vec![0x5a, 0, 0, 0, 0, 0, 0, p])
            .unwrap_or_default(),
        name: name.into(),
        kind: 2,
        start_time_unix_nano: start,
        end_time_unix_nano: start + dur_ms * 1_000_000,
        ..Default::default()
    }
}

fn resource(service: &str, extra: Vec<KeyValue>) -> Option<Resource> {
    let mut attributes = vec![kv("service.name", s(service))];
    attributes.extend(extra);
    Some(Resource {
        attributes,
        ..Default::default()
    })
}

fn batch(res: Option<Resource>, spans: Vec<Span>) -> ResourceSpans {
    ResourceSpans {
        resource: res,
        scope_spans: vec![ScopeSpans {
            scope: Some(InstrumentationScope {
                name: "sightline-test".into(),
                version: "1.0".into(),
                ..Default::default()
            }),
            spans,
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Trace 1: `chat-api` root with an HTTP attribute and an event, and an erroring 2.5 s LLM call
/// in `llm-gw` with GenAI attributes, an event and a link. Trace 2: a short, successful call.
fn data(t0: u64) -> (ExportTraceServiceRequest, ExportTraceServiceRequest) {
    let mut root = span(T1, 1, None, "POST /chat", t0, 3000);
    root.attributes = vec![
        kv("http.request.method", s("POST")),
        kv("http.response.status_code", Value::IntValue(500)),
    ];
    root.events = vec![Event {
        time_unix_nano: t0 + 10,
        name: "request.received".into(),
        attributes: vec![kv("bytes", Value::IntValue(512))],
        dropped_attributes_count: 0,
    }];
    root.status = Some(Status {
        code: 2,
        message: "upstream failed".into(),
    });
    let mut llm = span(T1, 2, Some(1), "chat gpt-4o", t0 + 200_000_000, 2500);
    llm.kind = 3;
    llm.attributes = vec![
        kv("gen_ai.operation.name", s("chat")),
        kv("gen_ai.provider.name", s("openai")),
        kv("gen_ai.request.model", s("gpt-4o")),
        kv("gen_ai.usage.input_tokens", Value::IntValue(120)),
        kv("gen_ai.usage.output_tokens", Value::IntValue(30)),
        kv(
            "gen_ai.response.finish_reasons",
            Value::ArrayValue(ArrayValue {
                values: vec![AnyValue {
                    value: Some(s("length")),
                }],
            }),
        ),
        kv("user.tier", s("pro")),
        kv("ratio", Value::DoubleValue(0.25)),
    ];
    llm.events = vec![Event {
        time_unix_nano: t0 + 300_000_000,
        name: "gen_ai.choice".into(),
        attributes: vec![
            kv("index", Value::IntValue(0)),
            kv("flag", Value::BoolValue(true)),
        ],
        dropped_attributes_count: 0,
    }];
    llm.links = vec![Link {
        trace_id: T2.to_vec(),
        span_id: vec![0x5a, 0, 0, 0, 0, 0, 0, 9],
        trace_state: "k=v".into(),
        attributes: vec![kv("link.kind", s("retry-of"))],
        ..Default::default()
    }];
    llm.status = Some(Status {
        code: 2,
        message: "rate limited".into(),
    });
    let mut other = span(T2, 9, None, "chat claude", t0 + 1_000_000_000, 100);
    other.attributes = vec![
        kv("gen_ai.request.model", s("claude-3")),
        kv("gen_ai.usage.input_tokens", Value::IntValue(40)),
    ];
    let acme = ExportTraceServiceRequest {
        resource_spans: vec![
            batch(resource("chat-api", vec![]), vec![root]),
            batch(
                resource("llm-gw", vec![kv("deployment.environment", s("prod"))]),
                vec![llm],
            ),
            batch(resource("chat-api", vec![]), vec![other]),
        ],
    };
    // Tenant "other": a trace of the same shape under another id.
    let mut theirs = span(T3, 1, None, "chat gpt-4o", t0, 2600);
    theirs.attributes = vec![kv("gen_ai.request.model", s("gpt-4o"))];
    theirs.status = Some(Status {
        code: 2,
        message: String::new(),
    });
    let other_tenant = ExportTraceServiceRequest {
        resource_spans: vec![batch(resource("llm-gw", vec![]), vec![theirs])],
    };
    (acme, other_tenant)
}

struct Api {
    server: ServerProcess,
    _dir: tempfile::TempDir,
}

impl Api {
    fn start(extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec!["--fsync", "never"];
        args.extend_from_slice(extra);
        let server = ServerProcess::start(&dir.path().join("data"), &args, dir.path().join("log"));
        Self { server, _dir: dir }
    }

    fn get(&self, path: &str, headers: &[(&str, &str)]) -> HttpResponse {
        http(self.server.http, "GET", path, headers, b"").unwrap()
    }

    fn get_json(&self, path: &str, tenant: &str) -> (u16, Json) {
        let r = self.get(path, &[("x-scope-orgid", tenant)]);
        let v = serde_json::from_slice(&r.body).unwrap_or(Json::Null);
        (r.status, v)
    }

    fn ingest(&self, req: &ExportTraceServiceRequest, tenant: &str) {
        let r = http(
            self.server.http,
            "POST",
            "/v1/traces",
            &[
                ("content-type", "application/x-protobuf"),
                ("x-scope-orgid", tenant),
            ],
            &req.encode_to_vec(),
        )
        .unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
    }
}

fn enc(q: &str) -> String {
    form_urlencoded::byte_serialize(q.as_bytes()).collect()
}

fn sorted(mut kvs: Vec<KeyValue>) -> Vec<KeyValue> {
    kvs.sort_by(|a, b| a.key.cmp(&b.key));
    kvs
}

/// The spans of a trace as sent, keyed by span id, with their resource.
fn sent_spans(req: &ExportTraceServiceRequest, trace: [u8; 16]) -> Vec<(Vec<KeyValue>, Span)> {
    let mut out = Vec::new();
    for rs in &req.resource_spans {
        for ss in &rs.scope_spans {
            for sp in &ss.spans {
                if sp.trace_id == trace {
                    out.push((rs.resource.clone().unwrap().attributes, sp.clone()));
                }
            }
        }
    }
    out.sort_by(|a, b| a.1.span_id.cmp(&b.1.span_id));
    out
}

fn got_spans(batches: &[ResourceSpans]) -> Vec<(Vec<KeyValue>, Span)> {
    let mut out = Vec::new();
    for rs in batches {
        for ss in &rs.scope_spans {
            assert_eq!(ss.scope.as_ref().unwrap().name, "sightline-test");
            assert_eq!(ss.scope.as_ref().unwrap().version, "1.0");
            for sp in &ss.spans {
                out.push((rs.resource.clone().unwrap().attributes, sp.clone()));
            }
        }
    }
    out.sort_by(|a, b| a.1.span_id.cmp(&b.1.span_id));
    out
}

fn assert_round_trip(sent: &[(Vec<KeyValue>, Span)], got: &[(Vec<KeyValue>, Span)]) {
    assert_eq!(sent.len(), got.len());
    for ((sres, s), (gres, g)) in sent.iter().zip(got) {
        assert_eq!(sorted(sres.clone()), sorted(gres.clone()));
        let mut s = s.clone();
        let mut g = g.clone();
        s.attributes = sorted(s.attributes);
        g.attributes = sorted(g.attributes);
        if s.status.is_none() {
            s.status = Some(Status::default());
        }
        assert_eq!(s, g);
    }
}

#[test]
fn grafana_tempo_datasource_requests() {
    let api = Api::start(&[]);
    let t0 = now_ns() - 60_000_000_000;
    let (acme, other) = data(t0);
    api.ingest(&acme, "acme");
    api.ingest(&other, "other");
    let start = t0 / 1_000_000_000 - 60;
    let end = t0 / 1_000_000_000 + 120;

    // Health check.
    let r = api.get("/api/echo", &[]);
    assert_eq!((r.status, r.text().as_str()), (200, "echo"));

    // Trace by id, v2 protobuf (what Grafana asks for), round-trips exactly.
    let pb = [
        ("accept", "application/protobuf"),
        ("x-scope-orgid", "acme"),
    ];
    let r = api.get(&format!("/api/v2/traces/{}", hex(&T1)), &pb);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/protobuf"));
    let resp = TraceByIdResponse::decode(r.body.as_slice()).unwrap();
    let batches = resp.trace.unwrap().batches;
    assert_eq!(batches.len(), 2, "one batch per resource");
    assert_round_trip(&sent_spans(&acme, T1), &got_spans(&batches));
    // v1 protobuf: the bare Trace, same content.
    let r = api.get(&format!("/api/traces/{}", hex(&T1)), &pb);
    assert_eq!(r.status, 200);
    let v1 = Trace::decode(r.body.as_slice()).unwrap();
    assert_round_trip(&sent_spans(&acme, T1), &got_spans(&v1.batches));
    // JSON: Tempo's shape with base64 ids.
    let (status, j) = api.get_json(&format!("/api/v2/traces/{}", hex(&T1)), "acme");
    assert_eq!(status, 200);
    let first = &j["trace"]["batches"][0]["scopeSpans"][0]["spans"][0];
    let b64 = base64::engine::general_purpose::STANDARD.encode(T1);
    assert_eq!(first["traceId"], b64.as_str());
    assert_eq!(first["name"], "POST /chat");
    let (status, j) = api.get_json(&format!("/api/traces/{}", hex(&T1)), "acme");
    assert_eq!(status, 200);
    assert_eq!(j["batches"].as_array().unwrap().len(), 2);

    // Unknown trace and another tenant's trace: 404.
    for (id, tenant) in [
        (hex(&[0x77; 16]), "acme"),
        (hex(&T1), "other"),
        (hex(&T3), "acme"),
    ] {
        let r = api.get(
            &format!("/api/v2/traces/{id}"),
            &[
                ("accept", "application/protobuf"),
                ("x-scope-orgid", tenant),
            ],
        );
        assert_eq!(r.status, 404, "{id} {tenant}");
    }
    let r = api.get("/api/v2/traces/not-hex", &pb);
    assert_eq!(r.status, 400);

    // Search with TraceQL, as Grafana's TraceQL editor sends it.
    let q = r#"{ resource.service.name = "llm-gw" && span.gen_ai.request.model = "gpt-4o" && duration > 2s && status = error }"#;
    let path = format!(
        "/api/search?q={}&limit=20&spss=3&start={start}&end={end}",
        enc(q)
    );
    let (status, j) = api.get_json(&path, "acme");
    assert_eq!(status, 200, "{j}");
    let traces = j["traces"].as_array().unwrap();
    assert_eq!(traces.len(), 1, "{j}");
    let t = &traces[0];
    assert_eq!(t["traceID"], hex(&T1));
    assert_eq!(t["rootServiceName"], "chat-api");
    assert_eq!(t["rootTraceName"], "POST /chat");
    assert_eq!(t["startTimeUnixNano"], t0.to_string());
    assert_eq!(t["durationMs"], 3000);
    let set = &t["spanSets"][0];
    assert_eq!(set["matched"], 1);
    assert_eq!(set["spans"][0]["spanID"], "5a00000000000002");
    assert_eq!(set["spans"][0]["durationNanos"], "2500000000");
    assert_eq!(
        set["spans"][0]["startTimeUnixNano"],
        (t0 + 200_000_000).to_string()
    );
    assert!(j["metrics"]["inspectedTraces"].as_u64().is_some());
    // The same query in tenant "other" finds only its own trace.
    let (_, j) = api.get_json(&path, "other");
    let ids: Vec<&str> = j["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["traceID"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![hex(&T3)]);
    // Regex, numeric attribute comparison, unscoped attribute.
    let q =
        r#"{ name =~ "chat.*" && .gen_ai.usage.input_tokens >= 40 && span.user.tier != "free" }"#;
    let (status, j) = api.get_json(
        &format!("/api/search?q={}&start={start}&end={end}", enc(q)),
        "acme",
    );
    assert_eq!(status, 200, "{j}");
    let ids: Vec<&str> = j["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["traceID"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![hex(&T2), hex(&T1)], "newest first");
    // Legacy search: logfmt tags and duration bounds.
    let (status, j) = api.get_json(
        &format!(
            "/api/search?tags={}&minDuration=2s&maxDuration=3s&limit=5&start={start}&end={end}",
            enc("service.name=chat-api")
        ),
        "acme",
    );
    assert_eq!(status, 200);
    let ids: Vec<&str> = j["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["traceID"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![hex(&T1)]);
    // A window before the data finds nothing.
    let (_, j) = api.get_json(
        &format!(
            "/api/search?q={}&start={}&end={}",
            enc("{}"),
            start - 7200,
            start - 3600
        ),
        "acme",
    );
    assert!(j["traces"].as_array().unwrap().is_empty());

    // Unsupported TraceQL: 400 naming the construct.
    for (q, needle) in [
        (r#"{ .a = "x" } | count() > 2"#, "pipelines"),
        (r#"{ .a = "x" } >> { .b = "y" }"#, ">>"),
        (r#"{ .a = "x" "#, "missing"),
    ] {
        let r = api.get(
            &format!("/api/search?q={}", enc(q)),
            &[("x-scope-orgid", "acme")],
        );
        assert_eq!(r.status, 400, "{q}");
        assert!(r.text().contains(needle), "{q}: {}", r.text());
    }

    // Tags, v1 and v2.
    let (status, j) = api.get_json(&format!("/api/search/tags?start={start}&end={end}"), "acme");
    assert_eq!(status, 200);
    let names: Vec<&str> = j["tagNames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for want in [
        "service.name",
        "deployment.environment",
        "http.request.method",
        "gen_ai.request.model",
        "user.tier",
    ] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
    let (_, j) = api.get_json(
        &format!("/api/v2/search/tags?scope=resource&start={start}&end={end}"),
        "acme",
    );
    let scopes = j["scopes"].as_array().unwrap();
    assert_eq!(scopes.len(), 1);
    assert_eq!(scopes[0]["name"], "resource");
    assert_eq!(
        scopes[0]["tags"],
        serde_json::json!(["deployment.environment", "service.name"])
    );
    let (_, j) = api.get_json("/api/v2/search/tags", "acme");
    let scope_names: Vec<&str> = j["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(scope_names, vec!["span", "resource", "intrinsic"]);
    let span_tags = &j["scopes"][0]["tags"];
    assert!(
        span_tags
            .as_array()
            .unwrap()
            .contains(&Json::from("gen_ai.usage.input_tokens"))
    );
    let (_, j) = api.get_json("/api/search/tags", "other");
    assert!(
        !j["tagNames"]
            .as_array()
            .unwrap()
            .contains(&Json::from("user.tier")),
        "tenant isolation"
    );

    // Tag values.
    let (_, j) = api.get_json("/api/search/tag/service.name/values", "acme");
    assert_eq!(j["tagValues"], serde_json::json!(["chat-api", "llm-gw"]));
    let (_, j) = api.get_json("/api/v2/search/tag/resource.service.name/values", "acme");
    assert_eq!(
        j["tagValues"],
        serde_json::json!([{"type": "string", "value": "chat-api"}, {"type": "string", "value": "llm-gw"}])
    );
    let (_, j) = api.get_json(
        "/api/v2/search/tag/span.gen_ai.usage.input_tokens/values",
        "acme",
    );
    assert_eq!(
        j["tagValues"],
        serde_json::json!([{"type": "int", "value": "120"}, {"type": "int", "value": "40"}])
    );
    let (_, j) = api.get_json("/api/v2/search/tag/status/values", "acme");
    assert_eq!(
        j["tagValues"],
        serde_json::json!([{"type": "keyword", "value": "error"}, {"type": "keyword", "value": "unset"}])
    );
    let q = enc(r#"{ resource.service.name = "chat-api" }"#);
    let (_, j) = api.get_json(&format!("/api/v2/search/tag/name/values?q={q}"), "acme");
    assert_eq!(
        j["tagValues"],
        serde_json::json!([{"type": "string", "value": "POST /chat"}, {"type": "string", "value": "chat claude"}])
    );
    let (_, j) = api.get_json("/api/v2/search/tag/resource.service.name/values", "other");
    assert_eq!(
        j["tagValues"],
        serde_json::json!([{"type": "string", "value": "llm-gw"}])
    );

    // The native API over the same data.
    let (status, j) = api.get_json(&format!("/api/v1/traces/{}?explain=true", hex(&T1)), "acme");
    assert_eq!(status, 200, "{j}");
    let d = &j["data"];
    assert_eq!(d["spans"].as_array().unwrap().len(), 2);
    assert_eq!(d["root"], "5a00000000000001");
    assert_eq!(d["spans"][1]["parent_span_id"], "5a00000000000001");
    assert_eq!(d["spans"][1]["gen_ai"]["request_model"], "gpt-4o");
    assert_eq!(d["spans"][1]["attributes"]["user.tier"], "pro");
    assert_eq!(d["spans"][1]["events"][0]["name"], "gen_ai.choice");
    assert_eq!(d["spans"][1]["links"][0]["trace_id"], hex(&T2));
    let path: Vec<(&str, u64, u64)> = d["critical_path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["span_id"].as_str().unwrap(),
                s["start_unix_nano"].as_u64().unwrap(),
                s["end_unix_nano"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        path,
        vec![
            ("5a00000000000001", t0, t0 + 200_000_000),
            ("5a00000000000002", t0 + 200_000_000, t0 + 2_700_000_000),
            ("5a00000000000001", t0 + 2_700_000_000, t0 + 3_000_000_000),
        ]
    );
    assert!(d["stats"]["rows_returned"].as_u64().unwrap() >= 2);
    let (status, j) = api.get_json(
        &format!("/api/v1/traces/search?service=llm-gw&model=gpt-4o&min_duration=2s&status=error&attr=user.tier%3Dpro&explain=true&start={start}&end={end}"),
        "acme",
    );
    assert_eq!(status, 200, "{j}");
    assert_eq!(j["data"]["traces"][0]["trace_id"], hex(&T1));
    assert_eq!(j["data"]["total_traces"], 1);
    assert!(j["data"]["stats"]["memtable_rows"].as_u64().is_some());
    let body = serde_json::json!({"group": "spans", "attr": ["gen_ai.request.model=~gpt-.*|claude-.*"], "sort": "duration", "start": start, "end": end});
    let r = http(
        api.server.http,
        "POST",
        "/api/v1/traces/search",
        &[
            ("content-type", "application/json"),
            ("x-scope-orgid", "acme"),
        ],
        body.to_string().as_bytes(),
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let j: Json = serde_json::from_slice(&r.body).unwrap();
    let names: Vec<&str> = j["data"]["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["chat gpt-4o", "chat claude"], "longest first");
    let (status, j) = api.get_json(
        &format!(
            "/api/v1/traces/red?group_by=model&step=1m&start={start}&end={end}&min_input_tokens=1"
        ),
        "acme",
    );
    assert_eq!(status, 200, "{j}");
    let groups: Vec<&str> = j["data"]["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["group"].as_str().unwrap())
        .collect();
    assert_eq!(groups, vec!["claude-3", "gpt-4o"]);
    assert_eq!(j["data"]["series"][1]["total"]["errors"], 1);
    assert_eq!(j["data"]["series"][1]["total"]["p50_ms"], 2500.0);
    // Paging by cursor, one trace per page, gives every trace once, in the order one big page
    // has, for either sort.
    for sort in ["start", "duration"] {
        let all = |extra: &str| {
            let (status, j) = api.get_json(
                &format!("/api/v1/traces/search?sort={sort}&start={start}&end={end}{extra}"),
                "acme",
            );
            assert_eq!(status, 200, "{j}");
            j["data"].clone()
        };
        let big = all("&limit=1000");
        let want: Vec<Json> = big["traces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["trace_id"].clone())
            .collect();
        assert!(want.len() >= 2, "{big}");
        assert_eq!(big["next_cursor"], Json::Null);
        let (mut got, mut cursor) = (Vec::new(), String::new());
        loop {
            let page = all(&format!("&limit=1{cursor}"));
            assert_eq!(page["total_traces"].as_u64(), Some(want.len() as u64));
            got.push(page["traces"][0]["trace_id"].clone());
            assert_eq!(
                page["remaining_traces"].as_u64(),
                Some((want.len() - got.len()) as u64)
            );
            match page["next_cursor"].as_str() {
                Some(c) => cursor = format!("&cursor={c}"),
                None => break,
            }
        }
        assert_eq!(got, want, "sort={sort}");
        // The CLI pages the same way: each page prints the cursor of the next.
        let (mut cli_got, mut cursor) = (Vec::new(), None::<String>);
        loop {
            let url = format!("http://{}", api.server.http);
            let (st, en) = (start.to_string(), end.to_string());
            let mut args = vec![
                "query", "traces", "--url", &url, "--tenant", "acme", "--sort", sort, "--limit",
                "1", "--start", &st, "--end", &en,
            ];
            if let Some(c) = &cursor {
                args.extend(["--cursor", c.as_str()]);
            }
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_sightline"))
                .args(&args)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(out.status.success(), "{text}");
            let id = want
                .iter()
                .map(|w| w.as_str().unwrap())
                .find(|w| text.contains(*w))
                .unwrap_or_else(|| panic!("no trace on the page: {text}"));
            cli_got.push(Json::from(id));
            match text.split("next page: --cursor ").nth(1) {
                Some(c) => cursor = Some(c.split_whitespace().next().unwrap().to_owned()),
                None => break,
            }
        }
        assert_eq!(cli_got, want, "CLI sort={sort}");
    }
    // Native API errors.
    for path in [
        "/api/v1/traces/search?cursor=zz".to_owned(),
        format!(
            "/api/v1/traces/search?sort=duration&cursor=s.1.{}",
            hex(&T1)
        ),
        format!("/api/v1/traces/search?group=spans&cursor=s.1.{}", hex(&T1)),
        "/api/v1/traces/search?limit=0".to_owned(),
        "/api/v1/traces/search?bogus=1".to_owned(),
        format!(
            "/api/v1/traces/search?q={}",
            enc("{ .a = 1 } | count() > 1")
        ),
        "/api/v1/traces/search?attr=%3D~(".to_owned(),
        "/api/v1/traces/red".to_owned(),
        "/api/v1/traces/zz".to_owned(),
    ] {
        let (status, j) = api.get_json(&path, "acme");
        assert_eq!(status, 400, "{path}: {j}");
        assert_eq!(j["status"], "error");
        assert!(j["error"].as_str().is_some_and(|e| !e.is_empty()));
    }
    let (status, j) = api.get_json(&format!("/api/v1/traces/{}", hex(&[0x77; 16])), "acme");
    assert_eq!((status, j["status"].as_str()), (404, Some("error")));
    api.server.stop();
}

#[test]
fn auth_is_required_when_tokens_are_configured() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "secret-a alpha\n").unwrap();
    let api = Api::start(&["--auth-tokens-file", tokens.to_str().unwrap()]);
    let r = api.get("/api/search?q=%7B%7D", &[]);
    assert_eq!(r.status, 401);
    let r = api.get(
        "/api/v1/traces/search",
        &[("authorization", "Bearer wrong")],
    );
    assert_eq!(r.status, 401);
    let j: Json = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(j["status"], "error");
    let r = api.get(
        "/api/search?q=%7B%7D",
        &[("authorization", "Bearer secret-a")],
    );
    assert_eq!(r.status, 200, "{}", r.text());
    api.server.stop();
}
