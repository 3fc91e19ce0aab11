//! Bad input over OTLP/HTTP and OTLP/gRPC against an in-process server: every case gets a
//! clear 4xx (or gRPC code) with a `Status` message, nothing of a rejected request is
//! stored, per-item rejections store exactly the accepted items, and the server keeps
//! serving afterwards.

use std::io::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::common::*;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse, trace_service_client::TraceServiceClient,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value::Value};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message as _;
use sightline_server::config::FsyncMode;
use sightline_server::grpc::rpc;
use sightline_server::{Config, Limits};
use sightline_storage::Store;

struct TestServer {
    rt: tokio::runtime::Runtime,
    http: SocketAddr,
    grpc: SocketAddr,
    store: std::sync::Arc<Store>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl TestServer {
    fn start(limits: Limits, tokens: Option<&str>) -> Self {
        Self::start_with(limits, tokens, |_| {})
    }

    fn start_with(limits: Limits, tokens: Option<&str>, adjust: impl FnOnce(&mut Config)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config {
            data_dir: dir.path().join("data"),
            http_addr: "127.0.0.1:0".parse().unwrap(),
            grpc_addr: "127.0.0.1:0".parse().unwrap(),
            limits,
            ..Config::default()
        };
        config.storage.fsync = FsyncMode::Never;
        if let Some(t) = tokens {
            let p = dir.path().join("tokens");
            std::fs::write(&p, t).unwrap();
            config.auth_tokens_file = Some(p);
        }
        adjust(&mut config);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let server = rt.block_on(sightline_server::serve::start(config)).unwrap();
        let (http, grpc) = (server.http_addr, server.grpc_addr);
        let store = server.ingest().store().clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let done = rt.spawn(async move {
            server
                .run_until(async {
                    let _ = rx.await;
                })
                .await
                .unwrap();
        });
        TestServer {
            rt,
            http,
            grpc,
            store,
            stop: Some(tx),
            done: Some(done),
            _dir: dir,
        }
    }

    fn post(&self, path: &str, headers: &[(&str, &str)], body: &[u8]) -> HttpResponse {
        http(self.http, "POST", path, headers, body).unwrap()
    }

    fn spans(&self) -> usize {
        all_spans(&self.store, &tenant("default")).len()
    }

    /// A valid request still works (the server keeps serving).
    fn assert_still_serving(&self) {
        let before = self.spans();
        let r = self.post(
            "/v1/traces",
            &PB,
            &traces(vec![span(1, 1, now())]).encode_to_vec(),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(self.spans(), before + 1);
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(d) = self.done.take() {
            let _ = self.rt.block_on(d);
        }
    }
}

const PB: [(&str, &str); 1] = [("content-type", "application/x-protobuf")];
const JSON: [(&str, &str); 1] = [("content-type", "application/json")];

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn span(trace: u8, id: u8, start: u64) -> Span {
    let mut trace_id = vec![0u8; 16];
    trace_id[15] = trace;
    trace_id[0] = 0xab;
    let mut span_id = vec![0u8; 8];
    span_id[7] = id;
    span_id[0] = 0xcd;
    Span {
        trace_id,
        span_id,
        name: "op".into(),
        start_time_unix_nano: start,
        end_time_unix_nano: start.saturating_add(1000),
        ..Default::default()
    }
}

fn traces(spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![KeyValue {
                    key: "service.name".into(),
                    value: Some(AnyValue {
                        value: Some(Value::StringValue("svc".into())),
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

fn status_message(r: &HttpResponse) -> String {
    match r.header("content-type") {
        Some("application/x-protobuf") => rpc::Status::decode(r.body.as_slice()).unwrap().message,
        _ => {
            let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            v["message"].as_str().unwrap().to_owned()
        }
    }
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn malformed_bodies_get_400_and_store_nothing() {
    let s = TestServer::start(Limits::default(), None);
    let valid = traces(vec![span(1, 1, now())]).encode_to_vec();
    type Case = (&'static str, Vec<u8>, [(&'static str, &'static str); 1]);
    let cases: Vec<Case> = vec![
        ("truncated protobuf", valid[..valid.len() - 7].to_vec(), PB),
        (
            "garbage protobuf",
            b"\xff\xff\xff\xff garbage \x00\x01".to_vec(),
            PB,
        ),
        ("invalid JSON", b"{\"resourceSpans\": [".to_vec(), JSON),
        (
            "JSON of the wrong shape",
            b"{\"resourceSpans\": 7}".to_vec(),
            JSON,
        ),
        (
            "invalid UTF-8 in JSON",
            b"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"name\":\"\xff\xfe\"}]}]}]}"
                .to_vec(),
            JSON,
        ),
        (
            "bad hex id in JSON",
            br#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz"}]}]}]}"#.to_vec(),
            JSON,
        ),
    ];
    for (what, body, headers) in cases {
        let r = s.post("/v1/traces", &headers, &body);
        assert_eq!(r.status, 400, "{what}: {}", r.text());
        let msg = status_message(&r);
        assert!(!msg.is_empty(), "{what}");
        assert_eq!(s.spans(), 0, "{what}");
    }
    // Invalid UTF-8 in a protobuf string field.
    let mut sp = span(1, 1, now());
    sp.name = "NAMEXX".into();
    let mut bytes = traces(vec![sp]).encode_to_vec();
    let pos = bytes.windows(6).position(|w| w == b"NAMEXX").unwrap();
    bytes[pos..pos + 2].copy_from_slice(&[0xff, 0xfe]);
    let r = s.post("/v1/traces", &PB, &bytes);
    assert_eq!(r.status, 400);
    assert!(
        status_message(&r).contains("protobuf"),
        "{}",
        status_message(&r)
    );
    // Invalid gzip.
    let r = s.post(
        "/v1/logs",
        &[
            ("content-type", "application/x-protobuf"),
            ("content-encoding", "gzip"),
        ],
        b"not gzip",
    );
    assert_eq!(r.status, 400);
    assert_eq!(s.spans(), 0);
    s.assert_still_serving();
}

#[test]
fn media_types_and_methods() {
    let s = TestServer::start(Limits::default(), None);
    let body = traces(vec![span(1, 1, now())]).encode_to_vec();
    let r = s.post("/v1/traces", &[("content-type", "text/plain")], &body);
    assert_eq!(r.status, 415);
    assert!(status_message(&r).contains("content type"));
    let r = s.post("/v1/traces", &[], &body);
    assert_eq!(r.status, 415);
    let r = s.post(
        "/v1/traces",
        &[
            ("content-type", "application/x-protobuf"),
            ("content-encoding", "br"),
        ],
        &body,
    );
    assert_eq!(r.status, 415);
    let r = http(s.http, "GET", "/v1/traces", &[], b"").unwrap();
    assert_eq!(r.status, 405);
    assert_eq!(s.spans(), 0);
    // Content type with parameters and gzip both work.
    let r = s.post(
        "/v1/traces",
        &[
            ("content-type", "application/x-protobuf; charset=binary"),
            ("content-encoding", "gzip"),
        ],
        &gzip(&body),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(s.spans(), 1);
}

#[test]
fn invalid_ids_and_timestamps_are_per_item() {
    let s = TestServer::start(Limits::default(), None);
    let t = now();
    let mut short = span(2, 2, t);
    short.trace_id.truncate(15);
    let mut zeros = span(3, 3, t);
    zeros.trace_id = vec![0; 16];
    let mut zero_span = span(4, 4, t);
    zero_span.span_id = vec![0; 8];
    let zero_time = span(5, 5, 0);
    let future = span(6, 6, t + 2 * 3600 * 1_000_000_000);
    let mut backwards = span(7, 7, t);
    backwards.end_time_unix_nano = t - 1;
    let bad = vec![short, zeros, zero_span, zero_time, future, backwards];
    // All bad: 400, nothing stored.
    let r = s.post("/v1/traces", &PB, &traces(bad.clone()).encode_to_vec());
    assert_eq!(r.status, 400);
    let msg = status_message(&r);
    assert!(msg.contains("all 6 items rejected"), "{msg}");
    assert!(msg.contains("trace id must be 16 bytes"), "{msg}");
    assert_eq!(s.spans(), 0);
    // Mixed: 200 with partial_success, exactly the good spans stored.
    let mut mixed = bad;
    mixed.push(span(8, 8, t));
    mixed.push(span(9, 9, t));
    let r = s.post("/v1/traces", &PB, &traces(mixed).encode_to_vec());
    assert_eq!(r.status, 200);
    let resp = ExportTraceServiceResponse::decode(r.body.as_slice()).unwrap();
    let ps = resp.partial_success.unwrap();
    assert_eq!(ps.rejected_spans, 6);
    assert!(ps.error_message.contains("zero"), "{}", ps.error_message);
    let stored = all_spans(&s.store, &tenant("default"));
    let mut ids: Vec<u8> = stored.iter().map(|x| x.span_id.0[7]).collect();
    ids.sort();
    assert_eq!(ids, vec![8, 9]);
    // JSON: same, with the partial-success body in JSON.
    let json = format!(
        r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[
        {{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"ok","startTimeUnixNano":"{t}","endTimeUnixNano":"{t}"}},
        {{"traceId":"00000000000000000000000000000000","spanId":"0102030405060708","name":"zero","startTimeUnixNano":"{t}","endTimeUnixNano":"{t}"}}]}}]}}]}}"#
    );
    let r = s.post("/v1/traces", &JSON, json.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["partialSuccess"]["rejectedSpans"], "1");
    assert_eq!(s.spans(), 3);
    // Logs: zero time takes the observed/receive time; far future is rejected.
    let logs = ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            scope_logs: vec![ScopeLogs {
                log_records: vec![
                    LogRecord {
                        body: Some(AnyValue {
                            value: Some(Value::StringValue("a".into())),
                        }),
                        ..Default::default()
                    },
                    LogRecord {
                        time_unix_nano: t + 7200 * 1_000_000_000,
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }],
            ..Default::default()
        }],
    };
    let r = s.post("/v1/logs", &PB, &logs.encode_to_vec());
    assert_eq!(r.status, 200);
    let logs = all_logs(&s.store, &tenant("default"));
    assert_eq!(logs.len(), 1);
    assert!(logs[0].time.0 > 0 && logs[0].time == logs[0].observed_time);
    s.assert_still_serving();
}

#[test]
fn size_limits_and_gzip_bomb() {
    let limits = Limits {
        max_body_bytes: 64 << 10,
        max_decompressed_bytes: 1 << 20,
        max_items_per_request: 100,
        ..Limits::default()
    };
    let s = TestServer::start(limits, None);
    // Body over the limit (declared and streamed).
    let big = vec![b'x'; 100 << 10];
    let r = s.post("/v1/traces", &PB, &big);
    assert_eq!(r.status, 413);
    assert!(status_message(&r).contains("limit"));
    // Gzip bomb: 64 MiB of zeros in ~64 KiB.
    let bomb = gzip(&vec![0u8; 64 << 20]);
    assert!(bomb.len() < 64 << 10, "{}", bomb.len());
    let r = s.post(
        "/v1/traces",
        &[
            ("content-type", "application/x-protobuf"),
            ("content-encoding", "gzip"),
        ],
        &bomb,
    );
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(status_message(&r).contains("decompressed"));
    // Too many items.
    let many: Vec<Span> = (0..101)
        .map(|i| span(1, (i % 250) as u8 + 1, now()))
        .collect();
    let r = s.post("/v1/traces", &PB, &traces(many).encode_to_vec());
    assert_eq!(r.status, 413);
    assert_eq!(s.spans(), 0);
    s.assert_still_serving();
}

#[test]
fn a_million_attributes() {
    let s = TestServer::start(Limits::default(), None);
    let mut sp = span(1, 1, now());
    sp.attributes = (0..1_000_000)
        .map(|i| KeyValue {
            key: format!("{}", i % 10),
            value: Some(AnyValue {
                value: Some(Value::IntValue(1)),
            }),
            ..Default::default()
        })
        .collect();
    let body = traces(vec![sp]).encode_to_vec();
    assert!(body.len() < 16 << 20);
    let started = std::time::Instant::now();
    let r = s.post("/v1/traces", &PB, &body);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        status_message(&r).contains("over the limit of 1024"),
        "{}",
        status_message(&r)
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    // A long value too.
    let mut sp = span(1, 2, now());
    sp.attributes = vec![KeyValue {
        key: "big".into(),
        value: Some(AnyValue {
            value: Some(Value::StringValue("v".repeat(300 << 10))),
        }),
        ..Default::default()
    }];
    let r = s.post("/v1/traces", &PB, &traces(vec![sp]).encode_to_vec());
    assert_eq!(r.status, 400);
    assert_eq!(s.spans(), 0);
    s.assert_still_serving();
    let m = http(s.http, "GET", "/metrics", &[], b"").unwrap().text();
    assert!(m.contains("sightline_ingest_rejected_items_total{signal=\"traces\",reason=\"too_many_attributes\"} 1"), "{m}");
    assert!(
        m.contains(
            "sightline_ingest_rejected_items_total{signal=\"traces\",reason=\"value_too_long\"} 1"
        ),
        "{m}"
    );
}

#[test]
fn auth_and_tenants() {
    let s = TestServer::start(Limits::default(), Some("secret-a alpha\nsecret-b beta\n"));
    let body = traces(vec![span(1, 1, now())]).encode_to_vec();
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("secret-a"),
        Some("Basic secret-a"),
    ] {
        let mut h = vec![("content-type", "application/x-protobuf")];
        if let Some(a) = auth {
            h.push(("authorization", a));
        }
        let r = s.post("/v1/traces", &h, &body);
        assert_eq!(r.status, 401, "{auth:?}");
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    }
    assert!(s.store.tenants().is_empty());
    let r = s.post(
        "/v1/traces",
        &[
            ("content-type", "application/x-protobuf"),
            ("authorization", "Bearer secret-b"),
            ("x-scope-orgid", "alpha"),
        ],
        &body,
    );
    assert_eq!(r.status, 200);
    assert_eq!(all_spans(&s.store, &tenant("beta")).len(), 1);
    assert_eq!(all_spans(&s.store, &tenant("alpha")).len(), 0);
    // gRPC: metadata, same rules and codes.
    let grpc = format!("http://{}", s.grpc);
    let req = traces(vec![span(2, 2, now())]);
    let (code, resp) = s.rt.block_on(async {
        let mut c = TraceServiceClient::connect(grpc.clone()).await.unwrap();
        let unauth = c.export(req.clone()).await.unwrap_err().code();
        let mut r = tonic::Request::new(req.clone());
        r.metadata_mut()
            .insert("authorization", "Bearer secret-a".parse().unwrap());
        (unauth, c.export(r).await)
    });
    assert_eq!(code, tonic::Code::Unauthenticated);
    assert!(resp.unwrap().into_inner().partial_success.is_none());
    assert_eq!(all_spans(&s.store, &tenant("alpha")).len(), 1);
}

#[test]
fn grpc_errors_and_partial_success() {
    let s = TestServer::start(Limits::default(), None);
    let grpc = format!("http://{}", s.grpc);
    let t = now();
    let (all_bad, partial, tenant_err) = s.rt.block_on(async {
        let mut c = TraceServiceClient::connect(grpc).await.unwrap();
        let all_bad = c.export(traces(vec![span(1, 1, 0)])).await.unwrap_err();
        let partial = c
            .export(traces(vec![span(1, 1, 0), span(1, 2, t)]))
            .await
            .unwrap()
            .into_inner();
        let mut r = tonic::Request::new(traces(vec![span(1, 3, t)]));
        r.metadata_mut()
            .insert("x-scope-orgid", "../etc".parse().unwrap());
        let tenant_err = c.export(r).await.unwrap_err();
        (all_bad, partial, tenant_err)
    });
    assert_eq!(all_bad.code(), tonic::Code::InvalidArgument);
    assert!(
        all_bad.message().contains("start_time_unix_nano is zero"),
        "{}",
        all_bad.message()
    );
    assert_eq!(partial.partial_success.unwrap().rejected_spans, 1);
    assert_eq!(tenant_err.code(), tonic::Code::InvalidArgument);
    assert_eq!(s.spans(), 1);
}

#[test]
fn retryable_errors_carry_retry_info() {
    use sightline_server::IngestError;
    let e = IngestError::OverBudget {
        retry_after: Duration::from_secs(2),
    };
    assert_eq!(e.http_status(), 503);
    let st = rpc::tonic_status(&e);
    assert_eq!(st.code(), tonic::Code::Unavailable);
    let details = rpc::Status::decode(st.details()).unwrap();
    assert_eq!(details.details[0].type_url, rpc::RETRY_INFO_TYPE);
    let info = rpc::RetryInfo::decode(details.details[0].value.as_slice()).unwrap();
    assert_eq!(info.retry_delay.unwrap().seconds, 2);
    let busy = IngestError::Busy {
        retry_after: Duration::from_secs(1),
    };
    assert_eq!(busy.http_status(), 429);
    assert_eq!(
        rpc::tonic_status(&busy).code(),
        tonic::Code::ResourceExhausted
    );
    let resp =
        sightline_server::http::otlp::error_response(&e, sightline_server::otlp::Encoding::Json);
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.headers().get("retry-after").unwrap(), "2");
}

/// One gauge point `name{k=v}` and one histogram point in OTLP JSON.
fn gauge_json(name: &str, values: &[&str], t: u64) -> String {
    let points: Vec<String> = values
        .iter()
        .map(|v| {
            format!(
                r#"{{"attributes":[{{"key":"k","value":{{"stringValue":"{v}"}}}}],"timeUnixNano":"{t}","asDouble":1.5}}"#
            )
        })
        .collect();
    format!(
        r#"{{"name":"{name}","gauge":{{"dataPoints":[{}]}}}}"#,
        points.join(",")
    )
}

fn metrics_json(metrics: &[String]) -> String {
    format!(
        r#"{{"resourceMetrics":[{{"scopeMetrics":[{{"metrics":[{}]}}]}}]}}"#,
        metrics.join(",")
    )
}

#[test]
fn series_limit_admits_per_series() {
    let s = TestServer::start_with(Limits::default(), None, |c| {
        c.storage.max_series_per_tenant = 4;
    });
    let t = now();
    let series = |s: &TestServer| -> Vec<String> {
        let mut v: Vec<String> = s
            .store
            .series(&tenant("default"), &[])
            .iter()
            .map(|d| {
                let labels: Vec<String> =
                    d.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("{}{{{}}}", d.metric_name, labels.join(","))
            })
            .collect();
        v.sort();
        v
    };
    let r = s.post(
        "/v1/metrics",
        &JSON,
        metrics_json(&[gauge_json("g", &["a", "b"], t)]).as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(series(&s), ["g{k=a}", "g{k=b}"]);
    // Known a, new c (fits), a histogram point needing 4 new series (only 1 slot left: the whole
    // point is refused, none of its series is created), and new d (no room).
    let hist = format!(
        r#"{{"name":"h","histogram":{{"aggregationTemporality":2,"dataPoints":[{{"timeUnixNano":"{t}","count":"2","sum":3,"bucketCounts":["1","1"],"explicitBounds":[1]}}]}}}}"#
    );
    let body = metrics_json(&[
        gauge_json("g", &["a", "c"], t + 1_000_000),
        hist,
        gauge_json("g", &["d"], t),
    ]);
    let r = s.post("/v1/metrics", &JSON, body.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["partialSuccess"]["rejectedDataPoints"], "2", "{v}");
    let msg = v["partialSuccess"]["errorMessage"].as_str().unwrap();
    assert!(msg.contains("limit of 4 series"), "{msg}");
    assert_eq!(series(&s), ["g{k=a}", "g{k=b}", "g{k=c}"]);
    assert_eq!(all_samples(&s.store, &tenant("default")).len(), 4);
    // One slot left: e fits; then f is over the limit and, being the whole request, a 400.
    let r = s.post(
        "/v1/metrics",
        &JSON,
        metrics_json(&[gauge_json("g", &["e"], t)]).as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = s.post(
        "/v1/metrics",
        &JSON,
        metrics_json(&[gauge_json("g", &["f", "a"], t + 2_000_000)]).as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["partialSuccess"]["rejectedDataPoints"], "1", "{v}");
    let r = s.post(
        "/v1/metrics",
        &JSON,
        metrics_json(&[gauge_json("g", &["f"], t)]).as_bytes(),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        status_message(&r).contains("all 1 items rejected"),
        "{}",
        status_message(&r)
    );
    assert_eq!(series(&s), ["g{k=a}", "g{k=b}", "g{k=c}", "g{k=e}"]);
    assert_eq!(all_samples(&s.store, &tenant("default")).len(), 6);
    // The refusals are counted by reason in the server's own metrics.
    let m = http(s.http, "GET", "/metrics", &[], b"").unwrap().text();
    assert!(
        m.lines()
            .any(|l| l.contains("series_limit") && l.ends_with(" 4")),
        "{}",
        m.lines()
            .filter(|l| l.contains("rejected"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    s.assert_still_serving();
}
