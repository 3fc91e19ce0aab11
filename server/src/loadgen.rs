//! Synthetic OTLP protobuf requests shaped like an LLM service's telemetry, shared by the
//! `otlp-load` load generator and the ingest benches (`server/benches/otlp.rs`), so both
//! measure the same payloads.

use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value::Value};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::metrics::v1::{
    Gauge, Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, metric::Data, number_data_point,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use prost::Message as _;

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

fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn resource(i: usize) -> Option<Resource> {
    Some(Resource {
        attributes: vec![
            kv("service.name", s(&format!("llm-svc-{}", i % 4))),
            kv("service.instance.id", s("load-1")),
            kv("deployment.environment.name", s("bench")),
        ],
        ..Default::default()
    })
}

/// A protobuf `ExportTraceServiceRequest` of `batch` LLM-like spans (GenAI attributes, 8 spans
/// per trace); `seq` makes ids unique across requests.
pub fn traces_body(seq: u64, batch: usize) -> Vec<u8> {
    let t0 = now_nanos();
    let spans = (0..batch)
        .map(|i| {
            let mut trace_id = [0u8; 16];
            trace_id[..8].copy_from_slice(&seq.to_be_bytes());
            trace_id[8..].copy_from_slice(&((i / 8) as u64 + 1).to_be_bytes());
            let mut span_id = [0u8; 8];
            span_id.copy_from_slice(&((seq << 20) | (i as u64 + 1)).to_be_bytes());
            let start = t0 + i as u64 * 1000;
            Span {
                trace_id: trace_id.to_vec(),
                span_id: span_id.to_vec(),
                name: if i % 8 == 0 {
                    "rag-pipeline".into()
                } else {
                    "chat gpt-4o".into()
                },
                kind: 3,
                start_time_unix_nano: start,
                end_time_unix_nano: start + 250_000_000,
                attributes: vec![
                    kv("gen_ai.operation.name", s("chat")),
                    kv("gen_ai.provider.name", s("openai")),
                    kv("gen_ai.request.model", s("gpt-4o")),
                    kv("gen_ai.response.model", s("gpt-4o-2024-08-06")),
                    kv("gen_ai.usage.input_tokens", Value::IntValue(800 + i as i64)),
                    kv("gen_ai.usage.output_tokens", Value::IntValue(120)),
                    kv("gen_ai.request.temperature", Value::DoubleValue(0.2)),
                    kv("gen_ai.conversation.id", s(&format!("conv-{}", i % 32))),
                    kv("user.id", s(&format!("user-{}", i % 100))),
                ],
                status: Some(Status::default()),
                ..Default::default()
            }
        })
        .collect();
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: resource(seq as usize),
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

/// The shape of [`traces_body_shaped`]'s spans: how many distinct values each dimension has and
/// how far back in time the traces spread.
#[derive(Clone, Copy, Debug)]
pub struct SpanShape {
    /// Traces start uniformly within this many nanoseconds before the body is made.
    pub spread_nanos: u64,
    /// Distinct `service.name`s (one per request, as one exporter sends its own spans).
    pub services: u64,
    /// Distinct span names.
    pub names: u64,
    /// Distinct request models (with their providers).
    pub models: u64,
    /// Distinct `user.id`s (one per trace).
    pub users: u64,
    /// Spans per trace.
    pub spans_per_trace: u64,
}

/// SplitMix64: a cheap, well-mixed hash so shaped bodies are deterministic per `seq`.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Like [`traces_body`], but with the cardinalities and time spread of `shape`: each trace gets
/// a start within the spread, one user, one model; each span a name, a duration, token counts
/// and (one in fifty) an error status. Deterministic in `seq`.
pub fn traces_body_shaped(seq: u64, batch: usize, shape: &SpanShape) -> Vec<u8> {
    const MODELS: [(&str, &str); 12] = [
        ("openai", "gpt-4o"),
        ("openai", "gpt-4o-mini"),
        ("anthropic", "claude-3-5-sonnet"),
        ("anthropic", "claude-3-haiku"),
        ("aws.bedrock", "llama-3-70b"),
        ("gcp.vertex_ai", "gemini-1.5-pro"),
        ("openai", "o1-mini"),
        ("mistral_ai", "mistral-large"),
        ("cohere", "command-r-plus"),
        ("gcp.vertex_ai", "gemini-1.5-flash"),
        ("aws.bedrock", "titan-text"),
        ("groq", "mixtral-8x7b"),
    ];
    let now = now_nanos();
    let per_trace = shape.spans_per_trace.max(1);
    let spans = (0..batch as u64)
        .map(|i| {
            let trace = i / per_trace;
            let h = mix(seq.wrapping_mul(1 << 20) ^ trace);
            let mut trace_id = [0u8; 16];
            trace_id[..8].copy_from_slice(&h.to_be_bytes());
            trace_id[8..].copy_from_slice(&mix(h).to_be_bytes());
            let span_id = mix(h ^ (i + 1)).max(1).to_be_bytes();
            let start = now - mix(h ^ 1) % shape.spread_nanos.max(1) - per_trace * 3_000_000
                + (i % per_trace) * 3_000_000;
            let hs = mix(h ^ (i << 8));
            let (provider, model) = MODELS[(mix(h ^ 2) % shape.models.clamp(1, 12)) as usize];
            let error = hs.is_multiple_of(50);
            Span {
                trace_id: trace_id.to_vec(),
                span_id: span_id.to_vec(),
                name: format!("op-{}", hs % shape.names.max(1)),
                kind: 3,
                start_time_unix_nano: start,
                end_time_unix_nano: start + 5_000_000 + (hs >> 16) % 2_000_000_000,
                attributes: vec![
                    kv("gen_ai.operation.name", s("chat")),
                    kv("gen_ai.provider.name", s(provider)),
                    kv("gen_ai.request.model", s(model)),
                    kv(
                        "gen_ai.usage.input_tokens",
                        Value::IntValue(((hs >> 8) % 4000) as i64),
                    ),
                    kv(
                        "gen_ai.usage.output_tokens",
                        Value::IntValue(((hs >> 24) % 800) as i64),
                    ),
                    kv(
                        "user.id",
                        s(&format!("user-{}", mix(h ^ 3) % shape.users.max(1))),
                    ),
                ],
                status: Some(if error {
                    Status {
                        code: 2,
                        message: "upstream failed".into(),
                    }
                } else {
                    Status::default()
                }),
                ..Default::default()
            }
        })
        .collect();
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![
                    kv(
                        "service.name",
                        s(&format!("svc-{}", seq % shape.services.max(1))),
                    ),
                    kv("service.instance.id", s("load-1")),
                ],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

/// A protobuf `ExportMetricsServiceRequest` of `batch` gauge points over 64 model series.
pub fn metrics_body(seq: u64, batch: usize) -> Vec<u8> {
    let t = now_nanos();
    let points = (0..batch)
        .map(|i| NumberDataPoint {
            attributes: vec![
                kv("model", s(&format!("m{}", i % 64))),
                kv("shard", s(&format!("{}", i / 64))),
            ],
            time_unix_nano: t,
            value: Some(number_data_point::Value::AsDouble((seq as f64) + i as f64)),
            ..Default::default()
        })
        .collect();
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: resource(0),
            scope_metrics: vec![ScopeMetrics {
                metrics: vec![Metric {
                    name: "llm.queue.latency".into(),
                    unit: "s".into(),
                    data: Some(Data::Gauge(Gauge {
                        data_points: points,
                    })),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

/// A protobuf `ExportLogsServiceRequest` of `batch` log lines.
pub fn logs_body(seq: u64, batch: usize) -> Vec<u8> {
    let t = now_nanos();
    let records = (0..batch)
        .map(|i| LogRecord {
            time_unix_nano: t + i as u64,
            severity_number: 9,
            severity_text: "INFO".into(),
            body: Some(AnyValue {
                value: Some(s(&format!(
                    "request {seq}-{i} answered by gpt-4o in 250 ms with 120 tokens"
                ))),
            }),
            attributes: vec![kv("route", s("/ask"))],
            ..Default::default()
        })
        .collect();
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: resource(0),
            scope_logs: vec![ScopeLogs {
                log_records: records,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}
