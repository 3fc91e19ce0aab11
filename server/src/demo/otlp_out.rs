//! OTLP out: building the protobuf messages the demo sends (with `opentelemetry-proto`'s
//! types) and a small HTTP client that posts them, and the demo's JSON API calls, to the
//! server it started.

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::metrics::v1::{Metric, ResourceMetrics, ScopeMetrics};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

use super::DemoError;

/// A string attribute.
pub fn s(k: &str, v: impl Into<String>) -> KeyValue {
    kv(k, any_value::Value::StringValue(v.into()))
}

/// An integer attribute.
pub fn i(k: &str, v: i64) -> KeyValue {
    kv(k, any_value::Value::IntValue(v))
}

/// A double attribute.
pub fn f(k: &str, v: f64) -> KeyValue {
    kv(k, any_value::Value::DoubleValue(v))
}

/// A string-array attribute.
pub fn sa(k: &str, v: &[&str]) -> KeyValue {
    let values = v
        .iter()
        .map(|x| AnyValue {
            value: Some(any_value::Value::StringValue((*x).to_owned())),
        })
        .collect();
    kv(
        k,
        any_value::Value::ArrayValue(opentelemetry_proto::tonic::common::v1::ArrayValue { values }),
    )
}

fn kv(k: &str, v: any_value::Value) -> KeyValue {
    KeyValue {
        key: k.to_owned(),
        value: Some(AnyValue { value: Some(v) }),
        ..Default::default()
    }
}

fn resource(service: &str) -> Option<Resource> {
    Some(Resource {
        attributes: vec![
            s("service.name", service),
            s("service.namespace", "shop-assistant"),
            s("service.version", "2.14.0"),
            s("deployment.environment.name", "demo"),
        ],
        ..Default::default()
    })
}

fn scope() -> Option<InstrumentationScope> {
    Some(InstrumentationScope {
        name: "sightline-demo".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        ..Default::default()
    })
}

/// Spans of several services as one export request (one resource per service).
pub fn traces_request(spans: Vec<(&'static str, Span)>) -> ExportTraceServiceRequest {
    let mut by: Vec<(&str, Vec<Span>)> = Vec::new();
    for (svc, sp) in spans {
        match by.iter_mut().find(|(s, _)| *s == svc) {
            Some((_, v)) => v.push(sp),
            None => by.push((svc, vec![sp])),
        }
    }
    ExportTraceServiceRequest {
        resource_spans: by
            .into_iter()
            .map(|(svc, spans)| ResourceSpans {
                resource: resource(svc),
                scope_spans: vec![ScopeSpans {
                    scope: scope(),
                    spans,
                    ..Default::default()
                }],
                ..Default::default()
            })
            .collect(),
    }
}

/// Log records of several services as one export request.
pub fn logs_request(logs: Vec<(&'static str, LogRecord)>) -> ExportLogsServiceRequest {
    let mut by: Vec<(&str, Vec<LogRecord>)> = Vec::new();
    for (svc, l) in logs {
        match by.iter_mut().find(|(s, _)| *s == svc) {
            Some((_, v)) => v.push(l),
            None => by.push((svc, vec![l])),
        }
    }
    ExportLogsServiceRequest {
        resource_logs: by
            .into_iter()
            .map(|(svc, log_records)| ResourceLogs {
                resource: resource(svc),
                scope_logs: vec![ScopeLogs {
                    scope: scope(),
                    log_records,
                    ..Default::default()
                }],
                ..Default::default()
            })
            .collect(),
    }
}

/// Metrics of one service as one export request.
pub fn metrics_request(service: &str, metrics: Vec<Metric>) -> ExportMetricsServiceRequest {
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: resource(service),
            scope_metrics: vec![ScopeMetrics {
                scope: scope(),
                metrics,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// A client of the demo's own server.
#[derive(Clone)]
pub struct Client {
    base: String,
    http: hyper_util::client::legacy::Client<
        hyper_util::client::legacy::connect::HttpConnector,
        Full<Bytes>,
    >,
}

impl Client {
    /// A client of `http://addr`.
    pub fn new(addr: std::net::SocketAddr) -> Self {
        Self {
            base: format!("http://{addr}"),
            http: hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http(),
        }
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    async fn send(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> Result<(u16, Vec<u8>), DemoError> {
        let req = axum::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("content-type", content_type)
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| DemoError::Http(e.to_string()))?;
        let resp = self
            .http
            .request(req)
            .await
            .map_err(|e| DemoError::Http(format!("{method} {path}: {e}")))?;
        let status = resp.status().as_u16();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| DemoError::Http(e.to_string()))?
            .to_bytes();
        Ok((status, bytes.to_vec()))
    }

    /// Posts an OTLP message to `/v1/<signal>` (protobuf), retrying on 429/503.
    pub async fn export(&self, signal: &str, msg: &impl prost::Message) -> Result<(), DemoError> {
        let body = msg.encode_to_vec();
        let path = format!("/v1/{signal}");
        for attempt in 0..50 {
            let (status, resp) = self
                .send("POST", &path, "application/x-protobuf", body.clone())
                .await?;
            match status {
                200 => return Ok(()),
                429 | 503 => {
                    tokio::time::sleep(std::time::Duration::from_millis(100 * (attempt + 1))).await
                }
                _ => {
                    return Err(DemoError::Http(format!(
                        "POST {path}: {status} {}",
                        String::from_utf8_lossy(&resp)
                    )));
                }
            }
        }
        Err(DemoError::Http(format!(
            "POST {path}: still refused after retries"
        )))
    }

    /// A JSON request; returns the status and the decoded body (`null` when not JSON).
    pub async fn json(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<(u16, serde_json::Value), DemoError> {
        let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        let (status, resp) = self.send(method, path, "application/json", bytes).await?;
        Ok((
            status,
            serde_json::from_slice(&resp).unwrap_or(serde_json::Value::Null),
        ))
    }
}
