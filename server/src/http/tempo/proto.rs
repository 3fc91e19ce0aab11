//! The Tempo wire messages Grafana reads, as prost messages over OTLP's `ResourceSpans`
//! (field numbers from grafana/tempo `pkg/tempopb/tempo.proto`):
//!
//! ```proto
//! message TraceByIDResponse { Trace trace = 1; TraceByIDMetrics metrics = 2; }
//! message TraceByIDMetrics { uint32 failedBlocks = 1; }
//! message Trace { repeated opentelemetry.proto.trace.v1.ResourceSpans batches = 1; }
//! ```
//!
//! Tempo's `tempopb.trace.v1.ResourceSpans` is a copy of OTLP's, field for field, so OTLP's
//! prost type encodes the same bytes.

use base64::Engine;
use opentelemetry_proto::tonic::trace::v1::ResourceSpans;

/// `tempopb.Trace`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Trace {
    /// Spans grouped by resource (`batches` in Tempo's JSON).
    #[prost(message, repeated, tag = "1")]
    pub batches: Vec<ResourceSpans>,
}

/// `tempopb.TraceByIDMetrics`.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct TraceByIdMetrics {
    /// Blocks that could not be read.
    #[prost(uint32, tag = "1")]
    pub failed_blocks: u32,
}

/// `tempopb.TraceByIDResponse` (the v2 trace-by-id answer).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TraceByIdResponse {
    /// The trace.
    #[prost(message, optional, tag = "1")]
    pub trace: Option<Trace>,
    /// Query metrics.
    #[prost(message, optional, tag = "2")]
    pub metrics: Option<TraceByIdMetrics>,
}

/// Rewrites hex id fields (`traceId`, `spanId`, `parentSpanId`) of OTLP JSON to base64, as
/// Tempo's JSON (gogo jsonpb over bytes fields) has them.
pub fn ids_to_base64(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if matches!(k.as_str(), "traceId" | "spanId" | "parentSpanId")
                    && let serde_json::Value::String(s) = val
                {
                    if let Some(bytes) = hex_bytes(s) {
                        *s = base64::engine::general_purpose::STANDARD.encode(bytes);
                    }
                } else {
                    ids_to_base64(val);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(ids_to_base64),
        _ => {}
    }
}

fn hex_bytes(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

/// Tempo's JSON form of a trace: `{"batches": [...]}` with base64 ids.
pub fn trace_json(batches: &[ResourceSpans]) -> serde_json::Value {
    let mut b = serde_json::to_value(batches).unwrap_or(serde_json::Value::Array(Vec::new()));
    ids_to_base64(&mut b);
    serde_json::json!({ "batches": b })
}
