//! OTLP out: the protobuf messages the demo sends (with `opentelemetry-proto`'s types);
//! [`crate::api_client::ApiClient::export`] posts them to the server the demo started.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::metrics::v1::{Metric, ResourceMetrics, ScopeMetrics};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

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
